"""One SigV4-presigned request, for the server scripts (no AWS CLI needed).

Usage: s3-request.py METHOD ENDPOINT BUCKET ACCESS_KEY SECRET
  GET: lists the bucket (max-keys=0): exits 0 on 200 (the readiness check)
  PUT: creates the bucket: exits 0 on 200
"""
import datetime, hashlib, hmac, sys, urllib.parse, urllib.request

method, endpoint, bucket, key, secret = sys.argv[1:6]
host = urllib.parse.urlparse(endpoint).netloc
now = datetime.datetime.now(datetime.timezone.utc)
amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
scope = f"{day}/us-east-1/s3/aws4_request"
query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": f"{key}/{scope}",
         "X-Amz-Date": amz_date, "X-Amz-Expires": "60", "X-Amz-SignedHeaders": "host"}
if method == "GET":
    query.update({"list-type": "2", "max-keys": "0"})
quote = lambda s: urllib.parse.quote(s, safe="-_.~")
canonical_query = "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(query.items()))
canonical = "\n".join([method, f"/{bucket}", canonical_query, f"host:{host}\n", "host", "UNSIGNED-PAYLOAD"])
to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
k = f"AWS4{secret}".encode()
for part in (day, "us-east-1", "s3", "aws4_request"):
    k = hmac.new(k, part.encode(), hashlib.sha256).digest()
signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
url = f"{endpoint}/{bucket}?{canonical_query}&X-Amz-Signature={signature}"
request = urllib.request.Request(url, method=method, data=b"" if method == "PUT" else None)
try:
    with urllib.request.urlopen(request, timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
