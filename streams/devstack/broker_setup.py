"""What the local broker needs before it can start: Java, the Kafka jars, config, a formatted
data dir.

Invariants:
- What is missing on this machine is reported first, as one ``StackError`` line: no Java (or
  one older than ``MIN_JAVA``), no Maven, Maven Central unreachable.
- The jars come from ``deploy/kafka/pom.xml`` through Maven into ``<state_dir>/kafka/libs``,
  resolved into an empty folder and trusted only while the marker's pom digest matches and
  every listed jar exists; ``KAFKA_HOME`` (``settings.kafka_home``) replaces them when set.
- The data dir is reformatted (it only holds local dev data) whenever it was formatted for
  other ports or is of unknown origin: ``--standalone`` writes the controller endpoint into
  the metadata log.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from string import Template

from schemas.settings import Settings
from streams.devstack.layout import POM, TEMPLATES, StackError, StackPaths

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
MIN_JAVA = 17


def find_java() -> str:
    """The ``java`` on PATH, checked to be Java ``MIN_JAVA`` or newer."""
    java = shutil.which("java")
    if java is None:
        raise StackError(f"no `java` on PATH: install Java {MIN_JAVA}+ (e.g. openjdk-17-jre)")
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"`java -version` failed: {exc}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        raise StackError(f"cannot read the Java version from `{java} -version`")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_x" style
        major = int(m.group(2))
    if major < MIN_JAVA:
        raise StackError(f"Java {major} found at {java}; Kafka 4 needs Java {MIN_JAVA}+")
    return java


def pom_digest() -> str:
    """SHA-256 of the pom the jars are resolved from."""
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def libs_complete(p: StackPaths) -> bool:
    """True when the jars of the current pom are all in place."""
    try:
        marker = json.loads(p.libs_marker.read_text())
    except (OSError, ValueError):
        return False
    return marker.get("pom_sha256") == pom_digest() and all(
        (p.libs / jar).is_file() for jar in marker.get("jars", [])
    )


_MVN_NOISE = re.compile(
    r"^(-> \[Help|To see the full stack|Re-run Maven|For more information|\[Help \d|$)"
)


def mvn_error_line(output: str) -> str:
    """The one meaningful error line of Maven's output (bounded to 400 characters)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if "[ERROR]" in line]
    meaningful = [line for line in errors if not _MVN_NOISE.match(line)]
    text = meaningful[-1] if meaningful else next((x for x in reversed(lines) if x), "no output")
    text = re.sub(r"\s*-> \[Help \d+\]$", "", text)
    # Maven nests causes as "...: cause: root cause": keep the head and the root cause.
    return text if len(text) <= 400 else f"{text[:150]} ... {text[-230:]}"


def resolve_jars(p: StackPaths) -> Path:
    """The Kafka jars' folder, resolved through Maven unless already complete."""
    if libs_complete(p):
        return p.libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("no `mvn` on PATH: install Maven (e.g. apt-get install maven)")
    # Start from an empty folder so jars of an older pom never linger on the classpath.
    shutil.rmtree(p.libs, ignore_errors=True)
    p.libs.mkdir(parents=True)
    cmd = [mvn, "-q", "-B", "-f", str(POM), DEPENDENCY_PLUGIN]
    cmd += [f"-DoutputDirectory={p.libs}", "-DincludeScope=runtime"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StackError("Maven timed out resolving the Kafka jars from Maven Central") from exc
    jars = sorted(j.name for j in p.libs.glob("*.jar"))
    if out.returncode != 0 or not any(j.startswith("kafka_2.13-") for j in jars):
        line = mvn_error_line(out.stdout + "\n" + out.stderr)
        raise StackError(
            f"Maven could not resolve the Kafka jars (is Maven Central reachable?): {line}"
        )
    if not any(j.startswith("log4j-slf4j-impl") for j in jars):
        raise StackError(
            "Maven resolved Kafka without log4j-slf4j-impl: check deploy/kafka/pom.xml"
        )
    p.libs_marker.write_text(json.dumps({"pom_sha256": pom_digest(), "jars": jars}))
    return p.libs


def kafka_libs(settings: Settings, p: StackPaths) -> Path:
    """The folder of the Kafka jars: ``KAFKA_HOME/libs`` when set, else Maven's."""
    if settings.kafka_home is not None:
        libs = settings.kafka_home.expanduser().resolve() / "libs"
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise StackError(f"KAFKA_HOME={settings.kafka_home} has no libs/kafka_2.13-*.jar")
        return libs
    return resolve_jars(p)


def write_config(settings: Settings, p: StackPaths) -> None:
    """Write server.properties (from the template) and the log4j2 config."""
    _, port = settings.kafka_host_port
    text = Template((TEMPLATES / "server.properties.template").read_text()).substitute(
        port=port, controller_port=settings.kafka_controller_port, log_dir=p.data
    )
    p.kafka.mkdir(parents=True, exist_ok=True)
    p.server_properties.write_text(text)
    shutil.copyfile(TEMPLATES / "log4j2.properties", p.log4j)


def new_cluster_id() -> str:
    """A random KRaft cluster id that StorageTool cannot mistake for an option."""
    while True:
        cid = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not cid.startswith("-"):  # StorageTool would read it as an option
            return cid


def ensure_formatted(settings: Settings, p: StackPaths, java: str, libs: Path) -> None:
    """Format the data dir unless it was formatted for the configured ports."""
    _, port = settings.kafka_host_port
    wanted = {"port": port, "controller_port": settings.kafka_controller_port}
    try:
        marker = json.loads(p.format_marker.read_text())
    except (OSError, ValueError):
        marker = {}
    if (p.data / "meta.properties").exists() and all(marker.get(k) == v for k, v in wanted.items()):
        return
    # --standalone writes the controller endpoint into the metadata log, so a dir formatted
    # for other ports (or of unknown origin) is reformatted; it only holds local dev data.
    shutil.rmtree(p.data, ignore_errors=True)
    p.format_marker.unlink(missing_ok=True)
    cid = new_cluster_id()
    cmd = [java, "-cp", f"{libs}/*", f"-Dlog4j2.configurationFile={p.log4j}"]
    cmd += ["kafka.tools.StorageTool", "format", "--standalone", "-t", cid]
    cmd += ["-c", str(p.server_properties)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
        raise StackError(f"Kafka StorageTool format failed: {last}")
    p.format_marker.write_text(json.dumps({**wanted, "cluster_id": cid}))
