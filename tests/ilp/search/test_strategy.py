"""The strategy record is every knob of the search, each documented in docs/tuning.md."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from autotm_core.errors import SettingError, UsageError
from autotm_core.ilp.search import DEFAULT_STRATEGY, Strategy
from autotm_core.planning import PlanSettings

TUNING = Path(__file__).parents[3] / "docs" / "tuning.md"


def test_every_knob_is_documented_with_its_default() -> None:
    text = TUNING.read_text()
    for field in attrs.fields(Strategy):
        value = getattr(DEFAULT_STRATEGY, field.name)
        shown = f"{value:g}" if isinstance(value, float) else f"{value:,}"
        assert f"| `{field.name}` | {shown} |" in text, field.name


def test_knobs_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="window_kernels"):
        Strategy(window_kernels=0)
    with pytest.raises(ValueError, match="retime_share"):
        Strategy(retime_share=1.5)


@pytest.mark.parametrize(("setting", "value"), [("relative_gap", 1.0),
                                                 ("time_limit_seconds", -1.0),
                                                 ("max_rounds", 0)])
def test_settings_name_the_field_out_of_range(setting: str, value: float) -> None:
    with pytest.raises(SettingError) as caught:
        PlanSettings(**{setting: value})
    assert caught.value.setting == setting and isinstance(caught.value, UsageError)
