#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lakekeeper_pause_guard
short_description: Resume a host's paused ingestion when the run that paused it never does
version_added: 0.1.0
description:
  - The guard of a pause of the role C(lakekeeper.hive.pipeline) - started by that role on the paused host as a
    background task (C(async), C(poll=0)), so that it outlives the C(ansible-playbook) process (an AWX job cancelled
    with SIGINT/SIGTERM, a controller killed with SIGKILL or lost).
  - Every O(poll_seconds) it reads the pause record O(state_file). When the record is gone or carries another
    O(token) (a resume ended the pause, or a later pause re-armed its own guard), the guard is disarmed and ends,
    changing nothing.
  - The expiry is the record's C(guard.expires_at) (the pause moves it to its own end once it has finished), else
    O(expires_at).
  - When the expiry passes with the record still there and still its own, it resumes what the record holds, as
    the role's resume does - re-enables and starts the systemd units, uncomments the exact cron lines, runs the
    C(resume) command of each paused hook it was given in O(hooks) - then keeps only what it could not resume in
    the record (or removes the record) and writes a report next to it (C(<state_file without .json>.guard.json))
    for the next run to show.
  - Hooks it was not given (HTTP hooks, hooks run on another host) stay in the record for the next run or the
    resume entry point.
  - Runs on the paused host and needs no root beyond what the pause itself needed (the same user edits the same
    crontabs and units), and no package beyond Python.
author:
  - Lakekeeper for Ansible contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  async:
    description:
      - Supports being used with the C(async) keyword.
    support: full
    details:
      - Meant to run with C(async) set a little above the expiry and C(poll=0).
  check_mode:
    support: full
    details:
      - In check mode nothing is waited for and nothing is changed.
  diff_mode:
    support: none
  idempotent:
    description:
      - When run twice with the same arguments, the second run changes nothing.
    support: full
    details:
      - Once fired, the record holds only what could not be resumed, or is gone.
  platform:
    platforms: posix
options:
  state_file:
    description:
      - The pause record, C(<pipeline_state_dir>/pipeline-<run_id>.json) of the role C(lakekeeper.hive.pipeline).
    type: path
    required: true
  token:
    description:
      - The token of this guard, written by the pause into the record (C(guard.token)). A record with another token
        (or none) is not this guard's pause any more.
    type: str
    required: true
  expires_at:
    description:
      - When the pause expires, in seconds since the epoch (UTC), unless the record says otherwise
        (C(guard.expires_at)).
    type: float
    required: true
  poll_seconds:
    description:
      - How often the record is read, in seconds (fractions allowed) - how soon after a resume the guard ends.
    type: float
    default: 10
  hooks:
    description:
      - The hooks whose C(resume) command the guard may run (command hooks run on this host) - each hook's name,
        as the record lists it, mapped to its C(resume) command, an argv list (no shell).
    type: dict
    default: {}
seealso:
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
---
# The role lakekeeper.hive.pipeline does this when pipeline_guard_seconds is set
- name: Guard the pause - resume in an hour if no run does
  lakekeeper.hive.lakekeeper_pause_guard:
    state_file: /var/lib/lakekeeper/pipeline-lakekeeper-paris.json
    token: "1732849200.123456-42"
    expires_at: 1732852800
    hooks:
      loader: [/opt/loader/bin/loaderctl, resume]
  async: 3900
  poll: 0
  no_log: true
"""

RETURN = r"""
---
fired:
  description: V(true) when the pause expired and the guard resumed it (or tried to).
  returned: always
  type: bool
  sample: true
disarmed:
  description: V(true) when the pause was ended (or re-armed) by a run before it expired.
  returned: always
  type: bool
  sample: false
resumed:
  description: What the guard resumed - C(systemd) (unit names), C(cron) (lines), C(hooks) (names).
  returned: when fired
  type: dict
  sample: {"systemd": ["ingest.timer"], "cron": [], "hooks": ["loader"]}
left:
  description: What stays paused in the record (for the next run), with C(errors) saying why.
  returned: when fired
  type: dict
  sample: {"systemd": [], "cron": [], "hooks": [{"name": "airflow"}], "errors": ["hook airflow: ..."]}
state_file:
  description: The pause record guarded (O(state_file)).
  returned: always
  type: str
  sample: /var/lib/lakekeeper/pipeline-lakekeeper-paris.json
report_file:
  description: The report the guard wrote for the next run.
  returned: when fired
  type: str
  sample: /var/lib/lakekeeper/pipeline-lakekeeper-paris.guard.json
"""

import json
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule


def _read(path):
    """The record, or None when there is none (or it cannot be read as one)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _float(value, default):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _write(module, path, doc):
    """Write ``doc`` as JSON to ``path`` (mode 0600), replacing it at once."""
    fd, tmp = tempfile.mkstemp(prefix=".guard-", dir=os.path.dirname(path) or ".")
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    os.chmod(tmp, 0o600)
    module.atomic_move(tmp, path)


def _cron_path(cron_file):
    return cron_file if cron_file.startswith("/") else os.path.join("/etc/cron.d", cron_file)


def _enable_lines(text, wanted):
    """``text`` with exactly the disabled (``#``) copies of ``wanted`` uncommented
    (the pipeline role's resume, filter pipeline_cron_edit in mode enable)."""
    out, done = [], []
    for line in text.split("\n") if text else []:
        candidate = line[1:] if line.startswith("#") else None
        if candidate is not None and candidate in wanted and done.count(candidate) < wanted.count(candidate):
            done.append(candidate)
            out.append(candidate)
        else:
            out.append(line)
    return "\n".join(out), done


def _resume_cron(module, entry):
    """Restore one crontab's lines; returns (restored lines, error or '')."""
    wanted = list(entry.get("lines") or [])
    user, cron_file = entry.get("user") or "", entry.get("cron_file") or ""
    if cron_file:
        path = _cron_path(cron_file)
        try:
            with open(path) as handle:
                text = handle.read()
        except (IOError, OSError) as exc:
            return [], "cron file %s: %s" % (path, exc)
        after, done = _enable_lines(text, wanted)
        if done:
            try:
                fd, tmp = tempfile.mkstemp(prefix=".guard-", dir=os.path.dirname(path))
                with os.fdopen(fd, "w") as handle:
                    handle.write(after)
                module.atomic_move(tmp, path)  # keeps the file's owner and mode
            except (IOError, OSError) as exc:
                return [], "cron file %s: %s" % (path, exc)
        return done, ""
    user_args = ["-u", user] if user else []
    rc, out, err = module.run_command(["crontab", "-l"] + user_args)
    if rc != 0 and "no crontab" not in (err or "").lower():
        return [], "crontab of %s: %s" % (user or "the user", (err or out).strip())
    after, done = _enable_lines(out if rc == 0 else "", wanted)
    if done:
        text = after if after.endswith("\n") else after + "\n"
        rc, out, err = module.run_command(["crontab"] + user_args + ["-"], data=text, binary_data=True)
        if rc != 0:
            return [], "crontab of %s: %s" % (user or "the user", (err or out).strip())
    return done, ""


def fire(module, state, hooks):
    """Resume what ``state`` records; returns (resumed, left)."""
    resumed = {"systemd": [], "cron": [], "hooks": []}
    left = {"systemd": [], "cron": [], "hooks": [], "errors": []}
    for unit in state.get("systemd") or []:
        name = unit.get("name", "")
        steps = (["enable"] if unit.get("disabled") else []) + (["start"] if unit.get("stopped") else [])
        for step in steps:
            rc, out, err = module.run_command(["systemctl", step, "--", name])
            if rc != 0:
                left["systemd"].append(unit)
                left["errors"].append("systemd %s: systemctl %s: %s" % (name, step, (err or out).strip()))
                break
        else:
            resumed["systemd"].append(name)
    for entry in state.get("cron") or []:
        done, error = _resume_cron(module, entry)
        resumed["cron"].extend(done)
        rest = [line for line in entry.get("lines") or [] if line not in done]
        if error:
            left["errors"].append(error)
        if rest:
            # not found disabled (edited meanwhile, or not disabled yet): kept for the next resume, which
            # restores it or reports it missing
            left["cron"].append(dict(entry, lines=rest))
            if not error:
                left["errors"].append("cron: %d line(s) not found disabled, left for the next resume" % len(rest))
    actions = dict((name, [str(a) for a in argv]) for name, argv in (hooks or {}).items() if isinstance(argv, list))
    for hook in state.get("hooks") or []:
        name = hook.get("name", "")
        if name not in actions:
            left["hooks"].append(hook)
            left["errors"].append("hook %s: no resume command the guard can run on this host "
                                  "(an HTTP hook, or one run on another host)" % name)
            continue
        rc, out, err = module.run_command(actions[name])
        if rc == 0:
            resumed["hooks"].append(name)
        else:
            left["hooks"].append(hook)
            left["errors"].append("hook %s: rc %s: %s" % (name, rc, (err or out).strip()[-500:]))
    return resumed, left


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state_file=dict(type="path", required=True),
            token=dict(type="str", required=True, no_log=False),
            expires_at=dict(type="float", required=True),
            poll_seconds=dict(type="float", default=10),
            hooks=dict(type="dict", default={}, no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    state_file, token = p["state_file"], p["token"]
    result = dict(changed=False, fired=False, disarmed=False, state_file=state_file)
    if module.check_mode:
        module.exit_json(msg="check mode: nothing guarded", **result)
    poll = max(p["poll_seconds"], 0.05)
    while True:
        state = _read(state_file)
        if state is None or (state.get("guard") or {}).get("token") != token:
            result["disarmed"] = True
            module.exit_json(msg="the pause was ended or re-armed before it expired", **result)
        # the record's expiry wins: the pause moves it to its own end once it has finished
        expires_at = _float((state.get("guard") or {}).get("expires_at"), p["expires_at"])
        now = time.time()
        if now >= expires_at:
            break
        time.sleep(min(poll, expires_at - now))

    resumed, left = fire(module, state, p["hooks"])
    fired_at = time.time()
    guard = dict(state.get("guard") or {}, fired_at=fired_at,
                 fired=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fired_at)))
    report = dict(run_id=state.get("run_id", ""), host=state.get("host", ""), paused_at=state.get("paused_at", ""),
                  guard=guard, resumed=resumed, left=left)
    report_file = (state_file[:-len(".json")] if state_file.endswith(".json") else state_file) + ".guard.json"
    try:
        _write(module, report_file, report)
        if left["systemd"] or left["cron"] or left["hooks"]:
            _write(module, state_file, dict(state, guard=dict(guard, token=""), systemd=left["systemd"],
                                            cron=left["cron"], hooks=left["hooks"]))
        else:
            os.remove(state_file)
    except (IOError, OSError) as exc:
        module.fail_json(msg="the guard resumed %s but could not update %s: %s" % (resumed, state_file, exc),
                         fired=True, resumed=resumed, left=left)
    module.exit_json(changed=bool(resumed["systemd"] or resumed["cron"] or resumed["hooks"]), fired=True,
                     disarmed=False, resumed=resumed, left=left, report_file=report_file, state_file=state_file,
                     msg="the pause expired: resumed %s" % resumed)


if __name__ == "__main__":
    main()
