# sharebroker — build, test, fuzz and benchmark.
GO       ?= go
BIN      ?= bin/sharebroker
FUZZTIME ?= 10s

IMAGE    ?= sharebroker:dev

.PHONY: build run test test-testcontainers lint binaries build-amd64 build-arm64 docker-images docker-amd64 docker-arm64 fuzz bench bench-scale docker image-context container-test clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/sharebroker

run: build
	./$(BIN) serve

# The one test command: README and .ci/run both call it.
test:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) test-testcontainers

# The testcontainers module (testcontainers/, its own go.mod so the
# broker's module does not depend on testcontainers-go): `go test ./...`
# above does not enter it. Its container tests skip unless
# SHAREBROKER_CONTAINER_IMAGE names an image (.ci/container-test.sh sets
# it); the rest (options, the broker module's dependency check, the CI
# recipes' YAML) always run.
# Without -race, as .ci/testcontainers-test.sh runs it with an image, so
# the second run reuses the first's build: the module is a thin HTTP and
# Docker client, and -race would rebuild testcontainers-go and Docker's
# client for little.
test-testcontainers:
	cd testcontainers && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

# staticcheck, pinned: it found a helper nobody called that should have been.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...
	cd testcontainers && $(GO) run $(STATICCHECK) ./...

# Every fuzz target, each for FUZZTIME.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# Every benchmark once, then the sharebroker/kfake table (bench/ratio.sh).
bench:
	GO=$(GO) ROUNDS=1 sh bench/ratio.sh ./...

# The scale sweeps (BenchmarkScale*: partitions, topics, members, idle
# connections, one partition), ROUNDS rounds (default 3), then one
# sharebroker/kfake table per sweep (bench/scale.sh).
bench-scale:
	GO=$(GO) sh bench/scale.sh

# The container image (Dockerfile): scratch plus the static binary.
docker: image-context
	docker build -t $(IMAGE) .

# What the Dockerfile copies: the binary and an empty directory that
# becomes /data, owned by the image's user.
image-context: build
	mkdir -p bin/image-data
	mkdir -p bin/image-tmp

# Two architectures. The static binary for linux/amd64 and linux/arm64 (Go
# cross-compiles; CGO_ENABLED=0 as for `build`): bin/sharebroker-amd64 and
# bin/sharebroker-arm64.
binaries: build-amd64 build-arm64
build-amd64 build-arm64: build-%:
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -o bin/sharebroker-$* ./cmd/sharebroker

# One image per architecture, $(IMAGE)-amd64 and $(IMAGE)-arm64, from the
# same Dockerfile: each gets a build context of its own (bin/image-<arch>/)
# holding that architecture's binary where the Dockerfile expects
# bin/sharebroker, and the empty directories image-context makes. FROM scratch has no base image, so nothing is pulled and
# no emulator runs. Join them under one multi-architecture name after
# pushing both (README, Two architectures):
#   docker manifest create REG/sharebroker:dev REG/sharebroker:dev-amd64 REG/sharebroker:dev-arm64
#   docker manifest push REG/sharebroker:dev
# (with buildx: docker buildx imagetools create -t REG/sharebroker:dev REG/...-amd64 REG/...-arm64).
docker-images: docker-amd64 docker-arm64
docker-amd64 docker-arm64: docker-%: build-%
	rm -rf bin/image-$*
	mkdir -p bin/image-$*/bin/image-data bin/image-$*/bin/image-tmp
	cp bin/sharebroker-$* bin/image-$*/bin/sharebroker
	docker build -q --platform linux/$* -f Dockerfile -t $(IMAGE)-$* bin/image-$*

# Build the image, run it, produce and share-consume through it
# (.ci/container-test.sh; starts a Docker daemon of its own if none runs).
container-test:
	bash .ci/container-test.sh

clean:
	rm -rf bin
