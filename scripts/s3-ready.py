"""Is the S3 endpoint ready? Sends one SigV4-presigned GET (ListObjectsV2, max-keys=0) on the
bucket and exits 0 on HTTP 200. Usage: s3-ready.py ENDPOINT BUCKET ACCESS_KEY SECRET"""
import datetime, hashlib, hmac, sys, urllib.parse, urllib.request

endpoint, bucket, key, secret = sys.argv[1:5]
host = urllib.parse.urlparse(endpoint).netloc
now = datetime.datetime.now(datetime.timezone.utc)
amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
scope = f"{day}/us-east-1/s3/aws4_request"
query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": f"{key}/{scope}",
         "X-Amz-Date": amz_date, "X-Amz-Expires": "60", "X-Amz-SignedHeaders": "host",
         "list-type": "2", "max-keys": "0"}
canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                           for k, v in sorted(query.items()))
canonical = "\n".join(["GET", f"/{bucket}", canonical_query, f"host:{host}\n", "host", "UNSIGNED-PAYLOAD"])
to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
k = f"AWS4{secret}".encode()
for part in (day, "us-east-1", "s3", "aws4_request"):
    k = hmac.new(k, part.encode(), hashlib.sha256).digest()
signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
url = f"{endpoint}/{bucket}?{canonical_query}&X-Amz-Signature={signature}"
try:
    with urllib.request.urlopen(url, timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
