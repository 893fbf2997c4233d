"""Kafka security settings reach both client families: librdkafka (confluent-kafka) options
from ``client_config`` and aiokafka credentials (faust) from ``aiokafka_config``."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import faust
import pytest
from pydantic import SecretStr

from schemas.settings import Settings
from streams.kafka.client import aiokafka_config, client_config


def _settings(**kw: object) -> Settings:
    return Settings(kafka_bootstrap="broker-1:9093,broker-2:9093", **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A throwaway CA and a client certificate/key signed by it (openssl)."""
    d = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "client.key",
        "-out",
        "client.csr",
        "-subj",
        "/CN=client",
    )
    run(
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "client.pem",
        "-days",
        "1",
    )
    return {"ca": d / "ca.pem", "cert": d / "client.pem", "key": d / "client.key"}


def test_plaintext() -> None:
    s = _settings()
    conf = client_config(s.kafka)
    assert conf["bootstrap.servers"] == "broker-1:9093,broker-2:9093"
    assert conf["security.protocol"] == "plaintext"
    assert not any(k.startswith(("sasl.", "ssl.")) for k in conf)
    assert aiokafka_config(s.kafka)["broker_credentials"] is None


def test_sasl_ssl_scram_sha_512(tls_files: dict[str, Path]) -> None:
    s = _settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="svc-consolidator",
        kafka_sasl_password=SecretStr("p@ss word"),
        kafka_ssl_cafile=tls_files["ca"],
    )
    conf = client_config(s.kafka)
    assert conf["security.protocol"] == "sasl_ssl"
    assert conf["sasl.mechanism"] == "SCRAM-SHA-512"
    assert conf["sasl.username"] == "svc-consolidator"
    assert conf["sasl.password"] == "p@ss word"
    assert conf["ssl.ca.location"] == str(tls_files["ca"])
    assert "ssl.certificate.location" not in conf

    creds = aiokafka_config(s.kafka)["broker_credentials"]
    assert isinstance(creds, faust.SASLCredentials)
    assert creds.username == "svc-consolidator" and creds.password == "p@ss word"
    assert creds.mechanism.value == "SCRAM-SHA-512"
    assert creds.protocol.value == "SASL_SSL"
    ctx = creds.ssl_context
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED
    assert any(c["subject"] == ((("commonName", "test-ca"),),) for c in ctx.get_ca_certs())


def test_sasl_plaintext_plain_has_no_tls() -> None:
    s = _settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism="PLAIN",
        kafka_sasl_username="u",
        kafka_sasl_password=SecretStr("p"),
    )
    assert client_config(s.kafka)["security.protocol"] == "sasl_plaintext"
    creds = aiokafka_config(s.kafka)["broker_credentials"]
    assert isinstance(creds, faust.SASLCredentials)
    assert creds.ssl_context is None
    assert creds.protocol.value == "SASL_PLAINTEXT"


def test_ssl_with_ca_cert_and_key(tls_files: dict[str, Path]) -> None:
    s = _settings(
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=tls_files["ca"],
        kafka_ssl_certfile=tls_files["cert"],
        kafka_ssl_keyfile=tls_files["key"],
    )
    conf = client_config(s.kafka)
    assert conf["security.protocol"] == "ssl"
    assert conf["ssl.ca.location"] == str(tls_files["ca"])
    assert conf["ssl.certificate.location"] == str(tls_files["cert"])
    assert conf["ssl.key.location"] == str(tls_files["key"])
    assert not any(k.startswith("sasl.") for k in conf)

    creds = aiokafka_config(s.kafka)["broker_credentials"]
    assert isinstance(creds, faust.SSLCredentials)
    ctx = creds.context
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED
    assert any(c["subject"] == ((("commonName", "test-ca"),),) for c in ctx.get_ca_certs())


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSOLIDATOR_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("CONSOLIDATOR_KAFKA_SASL_MECHANISM", "SCRAM-SHA-256")
    monkeypatch.setenv("CONSOLIDATOR_KAFKA_SASL_USERNAME", "env-user")
    monkeypatch.setenv("CONSOLIDATOR_KAFKA_SASL_PASSWORD", "env-pass")
    conf = client_config(Settings().kafka)
    assert conf["security.protocol"] == "sasl_ssl"
    assert (conf["sasl.mechanism"], conf["sasl.username"], conf["sasl.password"]) == (
        "SCRAM-SHA-256",
        "env-user",
        "env-pass",
    )


def test_sasl_without_a_mechanism_means_plain_for_both_clients() -> None:
    # librdkafka would default to GSSAPI (Kerberos) while aiokafka gets PLAIN: one Settings
    # object must configure both clients the same way.
    s = _settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_username="u",
        kafka_sasl_password=SecretStr("p"),
    )
    assert client_config(s.kafka)["sasl.mechanism"] == "PLAIN"
    assert aiokafka_config(s.kafka)["broker_credentials"].mechanism.value == "PLAIN"


def test_one_message_size_limit_everywhere() -> None:
    from streams.kafka.client import Publisher

    s = _settings().model_copy(update={"kafka_max_message_bytes": 2_000_000})
    aio = aiokafka_config(s.kafka)
    assert aio["producer_max_request_size"] == aio["consumer_max_fetch_size"] == 2_000_000
    pub = Publisher(s.kafka)
    assert pub.max_message_bytes == 2_000_000
