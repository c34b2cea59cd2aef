# Dockerfile -- two stages: build tocsin with cmake on Debian 12, run it on a slim Debian 12 with
# only the shared libraries it links. The runtime image holds the binary and nothing else of the
# repository (migrations and the browser files of web/ are compiled in); tzdata is the zoneinfo
# that time zones are checked and converted with. Runs as an unprivileged user.
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev make cmake pkg-config \
        libmicrohttpd-dev libjansson-dev libhiredis-dev libpq-dev libssl-dev libcurl4-openssl-dev \
        libical-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The source copy has no .git: the commit for `tocsin --version` and tocsin_build_info comes in
# as a build argument (docker/compose.yaml passes TOCSIN_COMMIT), "unknown" without one.
ARG TOCSIN_COMMIT=unknown
COPY CMakeLists.txt ./
COPY cmake ./cmake
COPY migrations ./migrations
COPY src ./src
COPY web ./web
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTOCSIN_WERROR=ON -DTOCSIN_COMMIT="$TOCSIN_COMMIT" \
 && cmake --build build -j"$(nproc)" --target tocsin \
 && install -m 0755 build/tocsin /usr/local/bin/tocsin

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmicrohttpd12 libjansson4 libhiredis0.14 libpq5 \
        libssl3 libcurl4 libical3 tzdata ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin tocsin
COPY --from=build /usr/local/bin/tocsin /usr/local/bin/tocsin
# Numeric, so that Kubernetes' runAsNonRoot can check it (deploy/kubernetes).
USER 10001:10001
ENV TOCSIN_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/tocsin"]
CMD ["serve"]
