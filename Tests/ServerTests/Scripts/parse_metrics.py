"""Parses Prometheus text exposition (stdin) with prometheus_client's own parser and prints every
sample as JSON: [{"name":…, "labels":{…}, "value":…}, …]. Exits non-zero when the text does not parse."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        samples.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(samples))
