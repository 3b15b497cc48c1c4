# `helm test`: send one AdmissionReview to the webhook Service, over TLS verified with the chart's CA, and
# check the answer. Arguments: the /validate URL and the CA file. Exit 0 only for a well-formed answer to
# this review; the findings kubegap returned are printed.
import json
import ssl
import sys
import urllib.request
import uuid

url, ca_file = sys.argv[1], sys.argv[2]
uid = str(uuid.uuid4())
# A two-node GPU training Pod without probes: the bundled policies find something to say about it.
pod = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "kubegap-helm-test", "namespace": "default"},
    "spec": {
        "containers": [
            {
                "name": "trainer",
                "image": "registry.example/trainer:1",
                "command": ["torchrun", "--nnodes=2", "train.py"],
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
            }
        ]
    },
}
review = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "name": "kubegap-helm-test",
        "object": pod,
        "dryRun": True,
        "userInfo": {"username": "kubegap-helm-test"},
    },
}
context = ssl.create_default_context(cafile=ca_file)  # verifies the chain and the Service's DNS name
request = urllib.request.Request(url, json.dumps(review).encode(), {"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, context=context, timeout=10) as reply:
        status, answer = reply.status, json.load(reply)
except (OSError, ValueError) as err:
    sys.exit(f"FAIL: no answer from {url}: {err}")
response = answer.get("response") if isinstance(answer, dict) else None
problems = []
if status != 200:
    problems.append(f"HTTP {status}")
if not isinstance(response, dict):
    problems.append("no response object")
else:
    if (answer.get("apiVersion"), answer.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        problems.append(f"not an admission.k8s.io/v1 AdmissionReview: {answer.get('apiVersion')}")
    if response.get("uid") != uid:
        problems.append(f"uid {response.get('uid')!r} is not the request's {uid!r}")
    if not isinstance(response.get("allowed"), bool):
        problems.append("response.allowed is not a boolean")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
message = (response.get("status") or {}).get("message", "")
print(f"OK: {url} answered uid {uid}: allowed={response['allowed']}")
for line in [message, *response.get("warnings", [])]:
    if line:
        print("  " + line)
