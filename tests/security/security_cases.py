"""Constants of the module-level cases (shared by conftest.py and the tests)."""

SECRETS = ("Zq7-S3cr3t-extra-conf-9fK2", "Pw0rd-in-environment-4Lm8")

SYSLOG_CAPTURE = """
import json, os, syslog
_real = syslog.syslog
def _capture(*args):
    with open(os.path.join(os.environ["LK_SYSLOG_DIR"], "syslog-%d.txt" % os.getpid()), "a") as fh:
        fh.write(json.dumps([str(a) for a in args]) + "\\n")
    try:
        _real(*args)
    except Exception:
        pass
syslog.syslog = _capture
"""


CASES = ("conflicting_selectors", "spark_submit_not_found", "no_metastore_config", "missing_keytab",
         "world_readable_keytab",
         "metastore_unreachable", "bad_older_than", "secret_failing", "secret_ok")
KINIT_CASES = ("kinit_expired_ticket", "kinit_expired_kdc_down")
