# Herald: the two commands that must work on a fresh machine.
#   make demo   route an example notification with the embedded default (SQLite + config/herald.example.yaml)
#   make test   the whole test suite
.PHONY: deps build demo test bench format lint clean

SWIFT ?= swift

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

demo: deps
	@bash scripts/demo.sh

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench: deps
	@bash scripts/bench.sh

format:
	$(SWIFT) format format -i -r Sources Tests Examples Package.swift

lint:
	$(SWIFT) format lint -r Sources Tests Examples
	python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
		Sources/HeraldHTTPTesting/Resources/fake_http_server.py Tests/ChannelsTests/Scripts/*.py

clean:
	rm -rf .build
