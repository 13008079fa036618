"""Schemathesis hooks for ferryd's control API (docs/openapi.json), loaded by contrib/openapi/check.sh.

Some request fields are opaque blobs whose validity a JSON Schema cannot express; the daemon checks them
semantically and refuses bad ones with 400, as it should. Left to itself, the fuzzer would take each such
refusal for "a schema-valid request rejected". So:

- PEM certificates and keys (format "pem-certificates", "pem-private-key"): generated from real ones,
  made by openssl when this file loads.
- resumeData.segments: a segment plan must tile 0..<total, which no schema can say; requests meant to be
  valid are sent without one (SegmentPlan's own tests cover its checks: Tests/FerryCoreTests).
"""

import os
import subprocess
import tempfile

import schemathesis
from hypothesis import strategies as st


def _openssl_pair():
    directory = tempfile.mkdtemp(prefix="ferry-openapi-")
    key, cert = os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=ferry-openapi-check"],
        check=True, capture_output=True,
    )
    with open(cert) as c, open(key) as k:
        return c.read(), k.read()


_CERTIFICATE, _KEY = _openssl_pair()

schemathesis.openapi.format("pem-certificates", st.just(_CERTIFICATE))
schemathesis.openapi.format("pem-private-key", st.just(_KEY))


def _without_segments(creation):
    if isinstance(creation, dict) and isinstance(creation.get("resumeData"), dict):
        creation["resumeData"].pop("segments", None)


def _meant_valid(case):
    """Whether the case as a whole, and each of its parts, was generated to be valid."""
    meta = getattr(case, "meta", None)
    if meta is None:
        return False

    def positive(mode):
        return getattr(mode, "value", mode) == "positive"

    components = getattr(meta, "components", None) or {}
    if any(not positive(getattr(info, "mode", None)) for info in components.values()):
        return False
    return positive(getattr(getattr(meta, "generation", None), "mode", None))


@schemathesis.hook
def before_call(context, case, kwargs):
    # Every phase passes here (the coverage phase does not use the filter hooks). Only requests meant to
    # be valid are touched: their segment plan goes (it is optional), so what remains is what a schema can
    # say. Requests meant to be invalid keep theirs.
    if not _meant_valid(case):
        return
    body = case.body
    _without_segments(body)
    if isinstance(body, dict) and isinstance(body.get("tasks"), list):
        for task in body["tasks"]:
            _without_segments(task)
