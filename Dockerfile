# syntax=docker/dockerfile:1
# The kubegap image: one `kubegap` entrypoint for the admission webhook (`kubegap serve`) and the audit
# (`kubegap audit`) that the Helm chart in charts/kubegap runs. Build and push:
#   docker build -t registry.example.com/kubegap/kubegap:0.1.0 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker push registry.example.com/kubegap/kubegap:0.1.0
# then install the chart with --set image.repository=registry.example.com/kubegap/kubegap (and pin
# image.digest to the pushed digest).

# Both stages use the same base so that the virtual environment built in the first runs in the second.
# Pinned by the digest of the multi-architecture index of python:3.11.14-slim-bookworm (Python 3.11: the
# version constraints.txt was resolved with); the tag only says what the digest is. Renew both together.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
# A C compiler for this stage only: the wheel compiles the engine's per-object modules with mypyc
# (setup.py), and the runtime stage takes the compiled environment, not the compiler.
RUN apt-get update \
 && apt-get install --yes --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md LICENSE constraints.txt ./
COPY kubegap ./kubegap
COPY policies ./policies
RUN python -m pip wheel --no-deps --wheel-dir /dist .
# The wheel and exactly the dependency versions in constraints.txt, in its own venv; pip itself is not
# needed at run time.
RUN python -m venv /opt/kubegap \
 && /opt/kubegap/bin/pip install --constraint constraints.txt "$(ls /dist/kubegap-*.whl)" \
 && /opt/kubegap/bin/pip uninstall --yes pip

FROM ${PYTHON_IMAGE} AS runtime
# Where the image comes from (OCI annotations): pass VERSION and REVISION (the commit) when building.
ARG SOURCE=https://github.com/kubegap/kubegap
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kubegap" \
      org.opencontainers.image.description="Reliability rules for GPU training workloads on Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV PATH=/opt/kubegap/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp
COPY --from=build /opt/kubegap /opt/kubegap
# The chart's pods run as this user with a read-only root file system (only /tmp is writable there).
USER 65532:65532
ENTRYPOINT ["kubegap"]
CMD ["--help"]
