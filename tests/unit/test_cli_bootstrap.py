"""A6 on AWS: `agentworks bootstrap` writes the first account and admin connection into the
deployed identity table and saves a working config (run here against moto)."""

from __future__ import annotations

import json
import stat

import boto3
from moto import mock_aws

from agentworks.identity.connection_store import ConnectionStore
from agentworks.identity.service import IdentityService
from agentworks_cli.main import main
from agentworks_local.template import create_resources


def test_a6_bootstrap_creates_admin_connection_and_config(tmp_path, capsys):
    with mock_aws():
        resources = create_resources(boto3.Session(region_name="us-east-1"), prefix="deployed")
        table = resources.tables["IdentityTable"]
        config = tmp_path / "admin.json"
        code = main(
            [
                "--config",
                str(config),
                "bootstrap",
                "--identity-table",
                table,
                "--url",
                "https://api.example.com/",
            ]
        )
        assert code == 0
        saved = json.loads(config.read_text())
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert saved["url"] == "https://api.example.com"
        principal = IdentityService(ConnectionStore(boto3.client("dynamodb"), table)).authenticate(
            saved["token"]
        )
        assert "admin" in principal.scopes and principal.account_id == saved["account_id"]
        assert saved["token"] in capsys.readouterr().out


def test_a6_bootstrap_reports_a_missing_table_in_one_line(tmp_path, capsys):
    with mock_aws():
        code = main(
            [
                "--config",
                str(tmp_path / "c.json"),
                "bootstrap",
                "--identity-table",
                "nope",
                "--url",
                "https://x",
            ]
        )
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write to nope")
