"""Generated hostile messages through the whole detector: no crash, no hang, every message
accounted for exactly once. `python bench/fuzz.py --messages 100000` is the long run."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdedup.config import DetectorConfig
from streamdedup.detector import Detector
from streamdedup.fuzzing import check_batch, message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(message, min_size=1, max_size=60))
def test_generated_messages_are_all_accounted_for(tmp_path_factory, messages):
    with Detector(DetectorConfig(batch_size=16), tmp_path_factory.mktemp("fuzz")) as detector:
        check_batch(detector, messages)
