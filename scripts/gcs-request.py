"""One JSON-API request to fake-gcs-server, for the server scripts (it needs no auth).

Usage: gcs-request.py METHOD ENDPOINT BUCKET
  GET: lists the buckets (GET /storage/v1/b): exits 0 on 200 (the readiness check)
  POST: creates the bucket (POST /storage/v1/b {"name": BUCKET}): exits 0 on 200
"""
import http.client, json, sys, urllib.parse

method, endpoint, bucket = sys.argv[1:4]
url = urllib.parse.urlparse(endpoint)
body = json.dumps({"name": bucket}).encode() if method == "POST" else None
headers = {"Content-Type": "application/json"} if body else {}
try:
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=2)
    connection.request(method, "/storage/v1/b", body=body, headers=headers)
    sys.exit(0 if connection.getresponse().status == 200 else 1)
except Exception:
    sys.exit(1)
