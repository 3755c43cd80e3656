"""HTTP client and config files of the `agentworks` CLI (standard library only).

The CLI must start fast, so nothing here imports boto3, pydantic or powertools, and the
heavy half of urllib is imported only when a request is made.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentworks_local import configfile

CONFIG_ENV = "AGENTWORKS_CONFIG"
DEFAULT_CONFIG_PATH = configfile.DEFAULT_CONFIG_PATH
DEFAULT_URL = "http://127.0.0.1:8787"
# Requests that do not long-poll still get this long; a long poll gets its wait on top.
BASE_TIMEOUT_SECONDS = 10.0
USER_AGENT = "agentworks-cli/0.1.0"

# Exit codes: scripts branch on these, so they never change meaning.
EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_NOT_FOUND = 4
EXIT_RATE_LIMITED = 5

NOT_AUTHORIZED = "not authorized: the token is missing, invalid, expired or revoked"
START_HINT = "start it with `make run` or `agentworks dev`"


class CliError(Exception):
    """A failure the CLI reports as one `error: …` line and an exit code.

    `body` is the error JSON printed on stdout under --json (the server's, when it sent one).
    """

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED, body: Any = None) -> None:
        super().__init__(message)
        self.message = " ".join(message.split())  # one line, always
        self.exit_code = exit_code
        self.body = body if body is not None else {"error": {"code": "cli", "message": message}}


# ---- config files ----


def segment(value: str) -> str:
    """`value` as one segment of an API path: escaped, '/' included, so an id or a name
    given on the command line can never reach another route."""
    return quote(value, safe="")


def given(**fields: Any) -> dict[str, Any]:
    """The fields of a request body that were given: a None (an option left out) is not sent,
    so the server applies its default."""
    return {name: value for name, value in fields.items() if value is not None}


def resolve_config_path(flag: str | None, environ: dict[str, str] | None = None) -> Path:
    """--config wins over AGENTWORKS_CONFIG, which wins over ~/.agentworks/config.json."""
    env = os.environ if environ is None else environ
    chosen = flag or env.get(CONFIG_ENV) or str(DEFAULT_CONFIG_PATH)
    return Path(chosen).expanduser()


@dataclass(frozen=True)
class Config:
    url: str
    token: str
    path: Path
    account_id: str | None = None
    push_url: str | None = None  # the push channel's WebSocket (`agentworks listen`)


def read_config_file(path: Path) -> dict[str, Any]:
    """The config's JSON object; CliError (never a traceback) when it is missing or broken."""
    try:
        return configfile.read_config(path)
    except configfile.ConfigError as exc:
        hint = "run `agentworks login --url URL --token TOKEN`"
        if not path.exists():
            hint += f" (or pass --config PATH / set {CONFIG_ENV})"
        raise CliError(f"{exc}; {hint}") from None


def load_config(path: Path) -> Config:
    data = read_config_file(path)
    url, token = data.get("url"), data.get("token")
    if not isinstance(url, str) or not url or not isinstance(token, str) or not token:
        raise CliError(
            f"config {path} needs both url and token; run `agentworks login --url URL "
            "--token TOKEN`"
        )
    account_id, push_url = data.get("account_id"), data.get("push_url")
    return Config(
        url=normalize_url(url),
        token=token,
        path=path,
        account_id=account_id if isinstance(account_id, str) else None,
        push_url=normalize_url(push_url) if isinstance(push_url, str) and push_url else None,
    )


def write_config_file(path: Path, data: dict[str, Any]) -> None:
    """Write a config holding a bearer token: mode 0600, its directory 0700 when created."""
    try:
        configfile.write_config(path, data)
    except OSError as exc:
        raise CliError(f"cannot write config {path}: {exc.strerror or exc}") from None


def normalize_url(url: str) -> str:
    return url.strip().rstrip("/")


# ---- HTTP ----


class ApiClient:
    """JSON over HTTP to one AgentWorks server, errors turned into CliError."""

    def __init__(self, url: str, token: str | None, config_path: Path | None = None) -> None:
        self.url = normalize_url(url)
        self.token = token
        self.config_path = config_path  # the config the token came from, for error hints

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        wait_seconds: float = 0.0,
    ) -> Any:
        """Send one request; returns the decoded JSON body of a 2xx answer."""
        import urllib.error
        import urllib.parse
        import urllib.request

        target = self.url + path
        params = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if params:
            target += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        timeout = BASE_TIMEOUT_SECONDS + max(0.0, wait_seconds)
        try:
            request = urllib.request.Request(target, data=data, headers=headers, method=method)
            with _opener(self.url).open(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = _read_quietly(exc)
            if exc.code == 401 and self.token and token_problem(self.token):
                raise malformed_token(self.token, self.url, self.config_path) from None
            if exc.code == 401 and self.token and local_stack_restarted(self.url, self.token):
                raise local_token_unknown(self.url, self.config_path) from None
            raise http_error(exc.code, raw, exc.headers.get("Retry-After")) from None
        except ValueError as exc:  # a malformed URL in the config
            raise CliError(f"invalid server URL {self.url!r}: {exc}") from None
        except TimeoutError:
            raise CliError(
                f"no answer from the AgentWorks server at {self.url} within {timeout:g} s; "
                f"is it running? {START_HINT}",
                EXIT_UNREACHABLE,
                _unreachable_body(self.url),
            ) from None
        except (OSError, urllib.error.URLError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise CliError(
                f"cannot reach the AgentWorks server at {self.url} ({_reason(reason)}); "
                f"{START_HINT}",
                EXIT_UNREACHABLE,
                _unreachable_body(self.url),
            ) from None
        except Exception as exc:  # http.client.HTTPException and friends: a broken answer
            raise CliError(
                f"broken answer from the AgentWorks server at {self.url} "
                f"({type(exc).__name__}); {START_HINT}",
                EXIT_UNREACHABLE,
                _unreachable_body(self.url),
            ) from None
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise CliError(
                f"the server at {self.url} answered with something that is not JSON; is "
                "this an AgentWorks server?"
            ) from None


def http_error(status: int, raw: bytes, retry_after_header: str | None = None) -> CliError:
    """The CliError for a non-2xx answer: message from the error body, exit code by status."""
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if status == 401:
        # The CLI sends the header itself: the server's "send Authorization: Bearer" would
        # not help; say what is wrong with the token in the CLI's words.
        return CliError(
            NOT_AUTHORIZED,
            EXIT_REFUSED,
            {"error": {"code": "unauthenticated", "message": NOT_AUTHORIZED}},
        )
    if not isinstance(error, dict):
        # A gateway's own answers ({"message": "Forbidden"}, e.g. a proxy in front of the
        # API) carry no error object.
        if status == 403:
            return CliError(
                NOT_AUTHORIZED,
                EXIT_REFUSED,
                {"error": {"code": "not_authorized", "message": NOT_AUTHORIZED}},
            )
        message = body.get("message") if isinstance(body, dict) else None
        text = f"the server answered HTTP {status}" + (f": {message}" if message else "")
        return CliError(
            text, _exit_code(status), {"error": {"code": f"http_{status}", "message": text}}
        )
    message = str(error.get("message") or error.get("code") or f"HTTP {status}")
    if status == 429:
        retry_after = error.get("retry_after", retry_after_header)
        if retry_after is not None and "retry after" not in message.lower():
            message = f"{message} (retry after {retry_after} s)"
    return CliError(message, _exit_code(status), body)


def is_local(url: str) -> bool:
    """Whether `url` is a server on this machine (a local stack)."""
    import urllib.parse

    return (urllib.parse.urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


TOKEN_FORM = "aw1.<account>.<connection>.<secret>"
TOKEN_MAX_CHARS = 256  # the server's bound (agentworks.identity.tokens)


def token_problem(token: str) -> str | None:
    """What makes `token` something no server issued, in words; None when it has the form
    of a connection token (whether a server knows it is the server's to say)."""
    parts = token.strip().split(".")
    if parts[0] != "aw1":
        return "it does not start with aw1."
    if len(parts) != 4:
        return f"it has {len(parts)} dot-separated parts, not 4"
    if not all(parts[1:]):
        return "one of its parts is empty"
    if len(token) > TOKEN_MAX_CHARS:
        return f"it is longer than {TOKEN_MAX_CHARS} characters"
    if any(c.isspace() for c in token.strip()):
        return "it has white space inside"
    return None


def malformed_token(token: str, url: str, config_path: Path | None) -> CliError:
    """The server refused a token that could never be valid: say that (a cut-off paste, a
    stray character), not that it expired or the stack restarted."""
    where = f" (in {config_path})" if config_path else ""
    message = (
        f"This token is malformed: {token_problem(token)}; a connection token looks like "
        f"{TOKEN_FORM}{where}. Paste it whole: agentworks login --url {url} --token -"
    )
    return CliError(
        message, EXIT_REFUSED, {"error": {"code": "malformed_token", "message": message}}
    )


def local_stack_restarted(url: str, token: str) -> bool:
    """Whether a local stack refused `token` because it restarted since the token was made:
    the admin config `agentworks dev` wrote at start names this URL and another account
    (a revoked or expired token of the current stack is just not authorized)."""
    if not is_local(url):
        return False
    try:
        current = read_config_file(configfile.default_config_path())
    except CliError:
        return False
    parts = token.split(".")  # aw1.<account_id>.<connection_id>.<secret>
    token_account = parts[1] if len(parts) == 4 else None
    stack_account = current.get("account_id")
    same_stack = normalize_url(str(current.get("url") or "")) == normalize_url(url)
    return same_stack and isinstance(stack_account, str) and token_account != stack_account


def local_token_unknown(url: str, config_path: Path | None) -> CliError:
    """A local stack refused the token, and its admin config names another account: it
    started with fresh state (--ephemeral, --reset or another --data-dir), so a token from
    before is unknown to it. Says where the new admin token is."""
    import shlex

    admin = configfile.default_config_path()  # where `agentworks dev` writes unless --config
    save = f" --save-config {shlex.quote(str(config_path))}" if config_path else ""
    message = (
        f"the local stack at {url} does not know this token: the local stack was restarted "
        "with fresh state (--ephemeral, --reset or another --data-dir), which forgets every "
        "connection. "
        f"`agentworks dev` wrote a new admin token to {admin} when it started (or to its "
        "--config); run `agentworks dev` if it is not running, then use that config, or "
        f"create this connection again: AGENTWORKS_CONFIG={shlex.quote(str(admin))} "
        f"agentworks connections create --name NAME{save}"
    )
    return CliError(
        message, EXIT_REFUSED, {"error": {"code": "unauthenticated", "message": message}}
    )


def _exit_code(status: int) -> int:
    if status in (404, 410):
        return EXIT_NOT_FOUND
    if status == 429:
        return EXIT_RATE_LIMITED
    return EXIT_REFUSED


def _query_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _opener(url: str) -> Any:
    import urllib.parse
    import urllib.request

    # A proxy from the environment must not capture requests to a local stack.
    if is_local(url):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _read_quietly(response: Any) -> bytes:
    try:
        return bytes(response.read())
    except Exception:
        return b""


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


def _unreachable_body(url: str) -> dict[str, Any]:
    return {
        "error": {
            "code": "unreachable",
            "message": f"cannot reach the AgentWorks server at {url}",
            "url": url,
        }
    }
