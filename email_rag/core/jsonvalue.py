"""The JSON types: what ``json.loads`` returns and ``json.dumps`` writes without a
``default``. For values that are JSON on the wire or on disk: HTTP bodies, the local
model's manifest, graph documents, the ``--json`` outputs, audit details."""

from __future__ import annotations

from typing import TypeAlias, Union

JsonScalar: TypeAlias = None | bool | int | float | str
JsonValue: TypeAlias = Union[JsonScalar, list["JsonValue"], dict[str, "JsonValue"]]  # noqa: UP007
JsonObject: TypeAlias = dict[str, JsonValue]
