"""The web UI for support staff and admins (FastAPI, server-rendered Jinja2)."""

from .app import create_app

__all__ = ["create_app"]
