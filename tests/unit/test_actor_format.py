"""Every audit actor is written one way, ``KIND:NAME``: a person ``user:NAME``, a
command-line call without ``--by`` ``cli:LOGIN``, the pipeline's processes ``worker:...``
(what takes queue entries) or ``system:...`` (what acts on its own: poller, scheduler,
maintenance)."""

from __future__ import annotations

import re

import pytest

from email_rag.core.actors import command_line, person, shown
from email_rag.core.states import Actor

ACTOR = re.compile(r"^(user|cli|worker|system):\S")


@pytest.mark.parametrize("actor", list(Actor))
def test_a_process_actor_is_worker_or_system_with_its_name(actor):
    assert re.match(r"^(worker|system):[a-z]", actor.value), actor.value


def test_people_and_processes_share_the_one_format():
    written = [person("anna"), person("user:anna"), command_line(None), command_line("anna"),
               *Actor]
    assert all(ACTOR.match(str(a)) for a in written), written
    assert len({a.split(":", 1)[0] for a in map(str, Actor)} | {"user", "cli"}) == 4


def test_a_person_reads_their_own_name():
    assert shown(person("anna")) == "anna"
    assert shown(Actor.POLLER) == str(Actor.POLLER)
