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
    for folder in ("email_rag", "workers", "cron"):
        assert f"COPY {folder} " in dockerfile
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


def test_the_benchmarks_are_not_in_the_product_wheel_or_image():
    """GIVEN bench/ (run on demand from a checkout) THEN the wheel installs no top-level
    ``bench`` package and the image does not copy it."""
    import tomllib

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert not any(p.startswith("bench") for p in find["packages"]["find"]["include"])
    assert "COPY bench" not in (ROOT / "Dockerfile").read_text()
