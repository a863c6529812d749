"""`email-rag idle` refuses settings with which a healthy IDLE is dropped or alarmed."""

from __future__ import annotations

import pytest

from email_rag.core.errors import ConfigError
from email_rag.core.settings import Settings
from email_rag.ingest.idle import check


def test_the_defaults_are_accepted():
    check(Settings())


@pytest.mark.parametrize("refresh", [0, 1740, 3000])
def test_a_reissue_interval_at_or_beyond_the_rfc_2177_limit_is_refused(refresh):
    with pytest.raises(ConfigError, match="RFC 2177"):
        check(Settings(idle_refresh_seconds=refresh))


def test_a_reissue_interval_longer_than_the_alarm_window_is_refused():
    with pytest.raises(ConfigError, match="ALARM"):
        check(Settings(idle_refresh_seconds=600, imap_alarm_after_seconds=300))
