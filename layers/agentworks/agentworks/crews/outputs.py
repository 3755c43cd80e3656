"""Files of function calls in S3 (F6, F8): a per-call prefix swept after 7 days by the
bucket's lifecycle rule, and a Crew-wide prefix shared by every caller."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from agentworks import limits


def call_prefix(crew_id: str, call_id: str) -> str:
    return f"calls/{crew_id}/{call_id}/"


def crew_prefix(crew_id: str) -> str:
    return f"crews/{crew_id}/outputs/"


RESULT_FILE = "result.json"


@dataclass(frozen=True)
class FilePage:
    path: str
    page: int
    pages: int
    size: int
    content: bytes


class FileGone(Exception):
    """The file was recorded but has since been swept (F8 → `expired`)."""


class OutputStore:
    def __init__(self, s3: Callable[[], Any], bucket: str) -> None:
        self._s3_factory = s3  # created on first use: most requests never touch files
        self._bucket = bucket

    @property
    def _s3(self) -> Any:
        return self._s3_factory()

    def put(self, prefix: str, path: str, content: bytes) -> int:
        self._s3.put_object(Bucket=self._bucket, Key=prefix + path, Body=content)
        return len(content)

    def read_page(self, prefix: str, path: str, page: int) -> FilePage:
        size_page = limits.FILE_PAGE_MAX_BYTES
        start = page * size_page
        try:
            head = self._s3.head_object(Bucket=self._bucket, Key=prefix + path)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                raise FileGone() from None
            raise
        size = int(head["ContentLength"])
        pages = max(1, -(-size // size_page))
        if page >= pages:
            return FilePage(path, page, pages, size, b"")
        body = self._s3.get_object(
            Bucket=self._bucket,
            Key=prefix + path,
            Range=f"bytes={start}-{min(size, start + size_page) - 1}",
        )["Body"].read()
        return FilePage(path, page, pages, size, body)
