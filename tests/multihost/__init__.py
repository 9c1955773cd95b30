"""Real hosts for tests: network namespaces with their own sshd (and systemd)."""

from .harness import Host, MultiHost, MultiHostError, check_prerequisites, reap_stale

__all__ = ["Host", "MultiHost", "MultiHostError", "check_prerequisites", "reap_stale"]
