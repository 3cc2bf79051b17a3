# Build a wheel in one stage and install it into a slim runtime without build tools.
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir build
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY boosting ./boosting
COPY migrations ./migrations
RUN python -m build --wheel --outdir /dist

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 oddsboost
COPY --from=build /dist/*.whl /tmp/
RUN pip install --no-cache-dir /tmp/*.whl && rm /tmp/*.whl
USER oddsboost
WORKDIR /home/oddsboost
ENV ODDSBOOST_HOST=0.0.0.0 \
    ODDSBOOST_PORT=8000
EXPOSE 8000
CMD ["oddsboost", "serve"]
