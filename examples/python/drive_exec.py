#!/usr/bin/env python3
"""Drive `aintern exec` from Python through its JSON event protocol.

`aintern exec` prints one JSON event a line on stdout and takes one JSON command a line
on stdin. This driver prints what happens, answers each approval request by a rule of its
own (write files only inside the workspace, never run commands), and exits 0 when the
request completed.

    python3 drive_exec.py --workspace DIR "Write hello into greeting.txt"
    python3 drive_exec.py --aintern target/debug/aintern --backend script:replies.json \
        --workspace DIR "..."

Only the standard library: copy it into any project.
"""

import argparse
import json
import subprocess
import sys


def decide(event):
    """The driver's policy for one approval_request: (approve?, reason)."""
    call = event["request"]
    tool = call["tool_id"]
    if tool in ("write_file", "edit_file"):
        return True, "file changes are fine"
    return False, f"this driver does not allow {tool}"


def send(process, command):
    process.stdin.write(json.dumps(command) + "\n")
    process.stdin.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aintern", default="aintern", help="the aintern binary")
    parser.add_argument("--backend", help="passed on as --backend (default: the embedded model)")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("message")
    args = parser.parse_args()

    command = [args.aintern, "exec", "--workspace", args.workspace, "--no-save"]
    if args.backend:
        command += ["--backend", args.backend]
    command.append(args.message)
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
    )

    completed = None
    for line in process.stdout:
        event = json.loads(line)
        kind = event["type"]
        if kind == "approval_request":
            approve, reason = decide(event)
            call_id = event["request"]["id"]
            print(f"approval: {event['request']['tool_id']} -> {'approve' if approve else 'deny'} ({reason})")
            if approve:
                send(process, {"op": "approve", "call_id": call_id, "remember": "none"})
            else:
                send(process, {"op": "deny", "call_id": call_id, "reason": reason})
        elif kind == "tool_result":
            result = event["result"]
            outcome = "succeeded" if result["success"] else ("denied" if result.get("denied") else "failed")
            print(f"tool: {event['tool_id']} {outcome}")
        elif kind == "agent_error" and event.get("is_fatal"):
            print(f"error: {event['error']}")
        elif kind == "agent_complete":
            completed = event
            print(f"answer: {event['final_response']}")
            print(f"calls run: {event['tool_calls_executed']}, denied: {event['tool_calls_denied']}")
    process.stdin.close()
    status = process.wait()
    if status != 0 or completed is None:
        print(f"aintern exec ended with status {status}", file=sys.stderr)
        return 1
    return 0 if completed["reason"] == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
