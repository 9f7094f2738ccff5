"""One Shared-Key-signed Azure Blob request, for the server scripts (no Azure CLI needed).

Usage: azure-request.py METHOD ENDPOINT CONTAINER ACCOUNT KEY [CA_FILE]
  ENDPOINT is the blob endpoint including the account path (Azurite's path style),
  e.g. http://127.0.0.1:10000/devstoreaccount1, or https://... with CA_FILE (a PEM bundle to trust)
  GET: reads the container's properties: exits 0 on 200 (the readiness check)
  PUT: creates the container: exits 0 on 201
x-ms-version is pinned to 2023-11-03, which Azurite 3.37.0 and Azure both accept.
"""
import base64, email.utils, hashlib, hmac, http.client, ssl, sys, urllib.parse

method, endpoint, container, account, key = sys.argv[1:6]
url = urllib.parse.urlparse(endpoint)
path = f"{url.path.rstrip('/')}/{container}"
query = {"restype": "container"}
headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2023-11-03"}
if method == "PUT":
    headers["Content-Length"] = "0"
# StringToSign: VERB, Content-Encoding, Content-Language, Content-Length (empty if 0), Content-MD5,
# Content-Type, Date, If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range,
# then the x-ms-* headers, then /account/<uri path> and the sorted query parameters.
length = headers.get("Content-Length", "")
to_sign = "\n".join([method, "", "", "" if length == "0" else length] + [""] * 8) + "\n"
to_sign += "".join(f"{k.lower()}:{v}\n" for k, v in sorted(headers.items()) if k.lower().startswith("x-ms-"))
to_sign += f"/{account}{path}" + "".join(f"\n{k}:{v}" for k, v in sorted(query.items()))
signature = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest())
headers["Authorization"] = f"SharedKey {account}:{signature.decode()}"
try:
    if url.scheme == "https":
        context = ssl.create_default_context(cafile=sys.argv[6] if len(sys.argv) > 6 else None)
        connection = http.client.HTTPSConnection(url.hostname, url.port, timeout=2, context=context)
    else:
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=2)
    connection.request(method, f"{path}?{urllib.parse.urlencode(query)}", headers=headers)
    status = connection.getresponse().status
    sys.exit(0 if status == (201 if method == "PUT" else 200) else 1)
except Exception:
    sys.exit(1)
