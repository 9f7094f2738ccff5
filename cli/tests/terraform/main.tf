# The state the Terraform interop test (interop.py) locks: Terraform 1.15's S3 backend with its
# lock file (use_lockfile), against a local server given at init by -backend-config (bucket,
# endpoints, keys). The skips keep Terraform off AWS's STS and IAM and off the metadata
# service; path-style keeps the bucket out of the host name (no DNS).
terraform {
  backend "s3" {
    region                      = "us-east-1"
    use_lockfile                = true
    use_path_style              = true
    skip_credentials_validation = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_region_validation      = true
  }
}

# How long an apply holds the lock, and where it notes when its work ended.
variable "sleep_seconds" {
  type    = number
  default = 0
}

variable "done_file" {
  type    = string
  default = "/dev/null"
}

# Built into Terraform: no provider download. Replaced on every apply, so the command runs
# each time.
resource "terraform_data" "work" {
  triggers_replace = [timestamp()]
  provisioner "local-exec" {
    command = "sleep ${var.sleep_seconds}; date +%s.%N > ${var.done_file}"
  }
}
