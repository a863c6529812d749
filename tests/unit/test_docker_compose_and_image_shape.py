"""docker-compose.yml cannot run here (no Docker engine); check its shape and wiring."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_has_the_production_services_wired_to_each_other():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"mariadb", "redis", "qdrant", "arangodb", "migrate", "worker", "scheduler", "idle", "web"} <= set(services)
    for name in ("worker", "scheduler", "idle", "web", "migrate"):
        svc = services[name]
        env = svc["environment"]
        assert env["EMAIL_RAG_DB_HOST"] == "mariadb"
        assert env["EMAIL_RAG_REDIS_URL"].startswith("redis://redis:")
        assert env["EMAIL_RAG_QDRANT_URL"].startswith("http://qdrant:")
        assert svc["build"] == "."
    assert services["worker"]["command"] == ["worker"]
    assert services["scheduler"]["command"] == ["scheduler"]
    assert services["idle"]["command"] == ["idle"]
    assert services["web"]["command"][0] == "web"
    assert services["worker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_dockerfile_copies_every_runtime_folder():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY email_rag " in dockerfile
    assert "COPY workers" not in dockerfile and "COPY cron" not in dockerfile
    assert 'ENTRYPOINT ["email-rag"]' in dockerfile


def test_migrations_prompts_and_queries_ship_inside_the_package():
    """GIVEN a non-editable install THEN migrations, prompts and named queries come with the
    package: pyproject.toml declares them as package data and each pattern finds files."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = data["package-data"]["email_rag"]
    for pattern in ("db/migrations/*.sql", "llm/prompts/*.txt", "db/sql/*.sql"):
        assert pattern in patterns
        assert list((ROOT / "email_rag").glob(pattern)), pattern
    assert not (ROOT / "migrations").exists() and not (ROOT / "prompts").exists()


def test_the_harness_is_not_in_the_product_wheel_or_image():
    """GIVEN the test harness's own distribution (harness/: chaos, doubles, demo, benchmarks)
    THEN the product's wheel finds only email_rag (nothing at the top of the repository
    besides it, no harness package data) and the image copies neither harness/ nor bench/."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert data["packages"]["find"]["include"] == ["email_rag*"]
    assert not any(p.startswith(("chaos", "testing")) for p in data["package-data"]["email_rag"])
    tops = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())
    assert tops == ["email_rag", "tests"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY bench" not in dockerfile and "COPY harness" not in dockerfile
    assert "COPY . " not in dockerfile
    harness = tomllib.loads((ROOT / "harness" / "pyproject.toml").read_text())
    assert harness["tool"]["setuptools"]["packages"]["find"]["include"] == ["email_rag_harness*"]


def dockerfile_env() -> dict[str, str]:
    """The image's ENV values (``ENV A=x \\`` continuation lines joined)."""
    import shlex

    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(part.split("=", 1) for part in shlex.split(line[4:]) if "=" in part)
    return env


def test_the_journals_live_on_the_volume_every_app_service_mounts():
    """GIVEN the image and the compose file THEN the image's VOLUME is its persistent dir, the
    send journal, the OAuth journal and the audit spool are inside it, and every app service
    of the compose file mounts the named volume there (a replaced container keeps them)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    volume = next(line.split()[1] for line in dockerfile.splitlines()
                  if line.startswith("VOLUME "))
    env = dockerfile_env()
    assert env["EMAIL_RAG_PERSISTENT_DIR"] == volume
    for name in ("EMAIL_RAG_SEND_JOURNAL_DIR", "EMAIL_RAG_OAUTH_JOURNAL_DIR",
                 "EMAIL_RAG_AUDIT_SPOOL_PATH"):
        assert env[name].startswith(volume + "/"), name
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    named = set(compose["volumes"])
    for name in ("worker", "scheduler", "idle", "web", "migrate"):
        mounts = dict(v.split(":", 1)[::-1] for v in compose["services"][name]["volumes"])
        assert mounts.get(volume) in named, (name, mounts)


def test_the_local_model_service_runs_llm_serve_from_its_own_image_stage():
    """GIVEN the compose file THEN its `llm` service runs `email-rag llm serve` on 8089 on
    every interface from the Dockerfile's `llm` stage (which installs the model with the
    install script and serves it with the same command), and the app services reach it
    unless .env names another endpoint."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    llm = compose["services"]["llm"]
    command = ["llm", "serve", "--host", "0.0.0.0", "--port", "8089"]
    assert llm["command"] == command and llm["build"] == {"context": ".", "target": "llm"}
    assert "8089/health" in " ".join(llm["healthcheck"]["test"])
    stages = (ROOT / "Dockerfile").read_text().split("\nFROM ")
    [stage] = [s for s in stages if s.startswith("base AS llm")]
    assert "bash scripts/local-llm/install.sh" in stage
    assert f"CMD {str(command).replace(chr(39), chr(34))}" in stage
    assert stages[-1].startswith("base AS app")  # `build: .` builds the app's image
    for name in ("worker", "scheduler", "idle", "web"):
        url = compose["services"][name]["environment"]["EMAIL_RAG_LLM_BASE_URL"]
        assert url == "${EMAIL_RAG_LLM_BASE_URL:-http://llm:8089/v1}"
