# syntax=docker/dockerfile:1
# mini-scheduler image: `docker build -t mini-scheduler:0.1.0 .`
# Build stage: the exact release build CI runs (.ci/run), with the committed Cargo.lock.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# The workspace's release profile keeps line tables for profiling (a 110 MB binary); the image
# drops debug info (24 MB) and keeps the symbol names that panic backtraces print.
ENV CARGO_PROFILE_RELEASE_STRIP=debuginfo
COPY . .
RUN cargo build --release --locked -p mini-scheduler

# Runtime: distroless with glibc and libgcc only (the binary links nothing else: TLS is
# rustls + ring), no shell, no package manager; numeric non-root user 65532 ("nonroot").
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/mini-scheduler /mini-scheduler
USER 65532:65532
# The secure port (HTTPS, kube-scheduler's --secure-port): /metrics, /healthz, /livez, /readyz.
EXPOSE 10259
ENTRYPOINT ["/mini-scheduler"]
CMD ["run"]
