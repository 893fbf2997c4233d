"""confluent-kafka plumbing shared by the worker, the SDK and the CLI.

Invariants: every client gets its security options from the one Settings object; topics are
created with the configured partition count (compacted ones with ``cleanup.policy=compact``)
before any worker consumes; ``publish`` returns only once the broker acknowledged.

One message-size limit (``kafka_max_message_bytes``) holds everywhere: the producer's
``message.max.bytes``, aiokafka's request and fetch sizes, and ``max.message.bytes`` on every
topic created here. A broker that does not answer in time is ``BrokerUnavailable`` (an
outage: the caller holds its work); a message the broker refuses is reported per message by
``publish_each`` (the caller dead-letters that one and goes on).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from schemas import topics
from schemas.settings_groups import KafkaSettings
from streams.ports import BrokerUnavailable as BrokerUnavailable  # the publisher raises it

_RDKAFKA_LOG = logging.getLogger("librdkafka")


def client_config(kafka: KafkaSettings) -> dict[str, Any]:
    """librdkafka options: bootstrap plus SASL/SSL exactly as configured."""
    conf: dict[str, Any] = {
        "bootstrap.servers": kafka.bootstrap,
        "security.protocol": kafka.security_protocol.lower(),
        # librdkafka prints every failed reconnect to stderr; route it through logging,
        # where the CLI keeps it quiet and errors still surface as exceptions.
        "logger": _RDKAFKA_LOG,
    }
    if kafka.security_protocol.startswith("SASL"):
        # The same default as aiokafka_config: librdkafka's own would be GSSAPI.
        conf["sasl.mechanism"] = kafka.sasl_mechanism or "PLAIN"
    if kafka.sasl_username:
        conf["sasl.username"] = kafka.sasl_username
    if kafka.sasl_password:
        conf["sasl.password"] = kafka.sasl_password.get_secret_value()
    if kafka.ssl_cafile:
        conf["ssl.ca.location"] = str(kafka.ssl_cafile)
    if kafka.ssl_certfile:
        conf["ssl.certificate.location"] = str(kafka.ssl_certfile)
    if kafka.ssl_keyfile:
        conf["ssl.key.location"] = str(kafka.ssl_keyfile)
    return conf


def aiokafka_config(kafka: KafkaSettings) -> dict[str, Any]:
    """The same options in faust's (aiokafka's) vocabulary."""
    conf: dict[str, Any] = {
        "broker_credentials": None,
        "producer_max_request_size": kafka.max_message_bytes,
        "consumer_max_fetch_size": kafka.max_message_bytes,
    }
    proto = kafka.security_protocol
    if proto == "PLAINTEXT":
        return conf
    import ssl

    import faust

    ctx = None
    if proto in ("SSL", "SASL_SSL"):
        ctx = ssl.create_default_context(cafile=str(kafka.ssl_cafile) if kafka.ssl_cafile else None)
        if kafka.ssl_certfile:
            ctx.load_cert_chain(
                str(kafka.ssl_certfile),
                str(kafka.ssl_keyfile) if kafka.ssl_keyfile else None,
            )
    if proto.startswith("SASL"):
        password = kafka.sasl_password
        conf["broker_credentials"] = faust.SASLCredentials(
            username=kafka.sasl_username,
            password=password.get_secret_value() if password else None,
            mechanism=kafka.sasl_mechanism or "PLAIN",
            ssl_context=ctx,
        )
    else:
        conf["broker_credentials"] = faust.SSLCredentials(ctx)
    return conf


def ensure_topics(kafka: KafkaSettings, timeout: float = 30.0) -> None:
    """Create the service's topics when missing (idempotent)."""
    t = topics.Topics(kafka.topic_prefix)
    admin = AdminClient(client_config(kafka))
    existing = set(admin.list_topics(timeout=timeout).topics)
    wanted = []
    for base in topics.ALL:
        name = t.name(base)
        if name in existing:
            continue
        compacted = base in topics.COMPACTED
        wanted.append(
            NewTopic(
                name,
                num_partitions=1 if compacted else kafka.partitions,
                replication_factor=kafka.replication_factor,
                config={
                    "cleanup.policy": "compact" if compacted else "delete",
                    "max.message.bytes": str(kafka.max_message_bytes),
                    **(
                        {}
                        if compacted
                        else {"retention.ms": str(int(kafka.retention_hours * 3.6e6))}
                    ),
                },
            )
        )
    if not wanted:
        return
    for name, fut in admin.create_topics(wanted, operation_timeout=timeout).items():
        try:
            fut.result()
        except KafkaException as exc:
            # Another worker created it between our list and our create: that is fine.
            if exc.args[0].code() != 36:  # TOPIC_ALREADY_EXISTS
                raise RuntimeError(f"cannot create topic {name}: {exc}") from exc


class Publisher:
    """A thread-safe, idempotent producer whose ``publish`` waits for every ack."""

    def __init__(self, kafka: KafkaSettings, **extra: Any):
        conf = client_config(kafka) | {
            "enable.idempotence": True,
            "linger.ms": 2,
            "compression.type": "lz4",
            "message.max.bytes": kafka.max_message_bytes,
        }
        conf.update(extra)
        self.max_message_bytes = int(conf["message.max.bytes"])
        self._producer = Producer(conf)
        self._lock = threading.Lock()

    def publish_each(
        self,
        messages: Sequence[tuple[str, str | bytes | None, bytes, Sequence[tuple[str, bytes]]]],
        timeout: float = 30.0,
    ) -> list[str | None]:
        """Produce every message; returns, per message, None (acknowledged) or why the
        broker or the client refused it. Raises ``BrokerUnavailable`` when some were neither
        acknowledged nor refused within ``timeout``."""
        results: list[str | None] = [None] * len(messages)

        def on_delivery(index: int) -> Any:
            def done(err: Any, _msg: Any) -> None:
                if err is not None:
                    results[index] = f"{err.name()}: {err.str()}"

            return done

        with self._lock:
            for index, (topic, key, value, headers) in enumerate(messages):
                while True:
                    try:
                        self._producer.produce(
                            topic,
                            value=value,
                            key=key,
                            headers=list(headers),
                            on_delivery=on_delivery(index),
                        )
                        break
                    except BufferError:
                        self._producer.poll(0.05)
                    except KafkaException as exc:  # refused locally: too large, bad topic...
                        err = exc.args[0]
                        results[index] = f"{err.name()}: {err.str()}"
                        break
            remaining = self._producer.flush(timeout)
        if remaining:
            raise BrokerUnavailable(f"{remaining} messages not acknowledged within {timeout}s")
        return results

    def publish(
        self,
        messages: Iterable[tuple[str, str | bytes | None, bytes, Sequence[tuple[str, bytes]]]],
        timeout: float = 30.0,
    ) -> int:
        """Produce every message or raise: ``BrokerUnavailable`` for an outage, RuntimeError
        naming the first refusal otherwise."""
        batch = list(messages)
        refused = [r for r in self.publish_each(batch, timeout) if r is not None]
        if refused:
            raise RuntimeError(f"publish failed: {refused[0]}")
        return len(batch)

    def close(self) -> None:
        """Flush what is queued and release the producer."""
        self._producer.flush(10)
