# Herald: the two commands that must work on a fresh machine.
#   make demo   route an example notification with the embedded default (SQLite + config/herald.example.yaml)
#   make test   the whole test suite
.PHONY: deps build release demo test custom-herald test-loaded test-tsan test-asan fuzz fuzz-smoke bench bench-serve bench-pg bench-fanout bench-relay bench-pulse bench-local bench-smoke attack-connections attack-front format lint clean

SWIFT ?= swift

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The release build of `herald`, as deployed and benchmarked: the Swift runtime and Foundation linked
# into the binary (no Swift toolchain needed on the host; an empty `herald send` peaks ~6 MB lower and
# starts in half the time than with them as shared libraries). herald-bench links the test kit, whose
# Testing module has no static build, so it stays dynamic.
release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product herald

demo: deps
	@bash scripts/demo.sh

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Examples/CustomHerald: a `herald` with the ntfy channel compiled in, built from Herald's products
# and run through its README's steps as written (validate, channels check, send to a local ntfy).
custom-herald: deps
	python3 Tests/ServerTests/Scripts/readme_steps.py Examples/CustomHerald/README.md

# The suite on a busy machine: two CPU-bound loops beside it, three runs in a row (RUNS=N to change).
# Not part of CI; it shows the tests assert orders and reasons, not durations.
test-loaded: deps
	@bash scripts/test-loaded.sh

# Sanitizers: the whole suite under ThreadSanitizer / AddressSanitizer, each in its own build folder.
# Suppressions (only for proven false positives, each with its reason) are in scripts/tsan.supp and,
# for LeakSanitizer (on in test-asan), scripts/lsan.supp.
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build-tsan
	HERALD_TEST_TIME_SCALE=8 TSAN_OPTIONS="second_deadlock_stack=1 suppressions=$(CURDIR)/scripts/tsan.supp" \
	  $(SWIFT) test --skip-build --sanitize=thread --build-path .build-tsan

test-asan: deps
	$(SWIFT) build --build-tests --sanitize=address --build-path .build-asan
	HERALD_TEST_TIME_SCALE=4 ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$(CURDIR)/scripts/lsan.supp" \
	  $(SWIFT) test --skip-build --sanitize=address --build-path .build-asan

# libFuzzer: every target in Fuzz/ for FUZZ_SECONDS each (default 60); fuzz-smoke is CI's 20 s run.
fuzz: deps
	@bash scripts/fuzz.sh

fuzz-smoke: deps
	@FUZZ_SECONDS=20 bash scripts/fuzz.sh

bench: deps
	@bash scripts/bench.sh

# herald serve beside its libmicrohttpd floor: accepted sends, registrations, event-stream fan-out.
bench-serve: deps
	@bash scripts/bench/serve.sh

# Issue 35: local push, 1,000 apps holding their stream and confirming at 1,000 notifications/s.
bench-local: deps
	@bash scripts/bench/local.sh

# Issue 30: connection floods (slowloris, event streams; 1,100 connections each) on a local debug
# herald, with /healthz probed during each (RELIABILITY.md, "Attack: connections").
attack-connections: deps
	$(SWIFT) build --product herald
	@python3 scripts/attack/connections.py

# Issue 30: the shipped nginx front (without TLS) refuses what libmicrohttpd answers badly, in JSON.
attack-front: deps
	$(SWIFT) build --product herald
	@python3 scripts/attack/nginx_front.py

# Issue 18: drain throughput on PostgreSQL (1, 2, 4 workers) beside SQLite, the pgbench floor, persist.
bench-pg: deps
	$(SWIFT) build -c release --static-swift-stdlib --product herald
	$(SWIFT) build -c release --product herald-bench
	@bash scripts/bench/pg.sh

# Issue 19: herald send end to end (whole process and in-process) beside the channel alone, aioapns and
# pywebpush, APNs and Web Push; SMOKE=1 checks the tooling in seconds.
bench-fanout: deps
	$(SWIFT) build -c release --static-swift-stdlib --product herald
	@bash scripts/bench/fanout.sh

# Issue 32: herald serve's hapi and openchamber relays (100 clients) beside herald send, one APNs sink.
bench-relay: deps
	$(SWIFT) build -c release --static-swift-stdlib --product herald
	$(SWIFT) build -c release --product herald-bench
	@HERALD_BIN_DIR=.build/release bash scripts/bench/relay.sh

# Issue 33: herald serve as a Pulse Relay (signed site updates, guide's limits) beside herald send, one APNs sink.
bench-pulse: deps
	$(SWIFT) build -c release --static-swift-stdlib --product herald
	$(SWIFT) build -c release --product herald-bench
	@HERALD_BIN_DIR=.build/release bash scripts/bench/pulse.sh

# CI's short run of every benchmark script at tiny scale on the debug build (tooling, not speed).
bench-smoke: deps
	$(SWIFT) build
	@bash scripts/bench/smoke.sh

format:
	$(SWIFT) format format -i -r Sources Tests Examples Package.swift

lint:
	$(SWIFT) format lint --strict -r Sources Tests Examples Package.swift
	python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
		Sources/HeraldHTTPTesting/Resources/fake_http_server.py Tests/ChannelsTests/Scripts/*.py

clean:
	rm -rf .build .build-tsan .build-asan Fuzz/.build Fuzz/.work
