"""Producers wait for every in-sync replica: with the cluster's min.insync.replicas=2, an
acknowledged write is on two brokers and survives the loss of one (the cluster test kills
leaders; losses from acks=1 would show there only by chance)."""

from __future__ import annotations

from footfall_capture.kafka import KafkaSettings, producer_config
from footfall_capture.sink import COLLECTOR_PRODUCER


def test_producers_are_idempotent_with_acks_all() -> None:
    config = producer_config(KafkaSettings("k1:9092,k2:9092,k3:9092"))
    assert (config["acks"], config["enable.idempotence"]) == ("all", True)
    assert config["bootstrap.servers"] == "k1:9092,k2:9092,k3:9092"


def test_the_collectors_overrides_keep_acks_all() -> None:
    config = producer_config(KafkaSettings("k1:9092"), **COLLECTOR_PRODUCER)
    assert (config["acks"], config["enable.idempotence"]) == ("all", True)
