# syntax=docker/dockerfile:1
# Build stage: install the project (no dev or report extras) into a virtual environment.
ARG PYTHON_VERSION=3.11
FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/oddsboost
COPY pyproject.toml README.md alembic.ini constraints.txt ./
COPY app ./app
COPY boosting ./boosting
COPY migrations ./migrations
# The versions the suite was run with, not whatever is newest on the day of the build;
# PIP_CONSTRAINT reaches pip's isolated build environment, so the build backend is pinned too.
RUN PIP_CONSTRAINT=/src/constraints.txt /opt/oddsboost/bin/pip install . --constraint constraints.txt

# Runtime stage: the same slim base, the environment copied over; no compilers, no sources.
FROM python:${PYTHON_VERSION}-slim
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin oddsboost \
    && mkdir -p /data \
    && chown oddsboost /data
COPY --from=build /opt/oddsboost /opt/oddsboost
ENV PATH=/opt/oddsboost/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ODDSBOOST_HOST=0.0.0.0 \
    ODDSBOOST_PORT=8000 \
    ODDSBOOST_DATABASE_URL=sqlite:////data/oddsboost.db \
    PROMETHEUS_MULTIPROC_DIR=/tmp/oddsboost-metrics
USER oddsboost
WORKDIR /home/oddsboost
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["oddsboost", "health"]
CMD ["oddsboost", "serve"]
