# Storefront's production image: one image for the web (gunicorn), the Celery worker and beat;
# compose.yaml shows how to run them. Build: `docker build -t storefront .`
# Settings come from the environment at run time (docs/configuration.md); nothing secret is
# baked in.

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
# Dependencies first, from the hash-checked lock alone (requirements/run.txt, `make lock`), so a
# code change reuses this layer. The code runs from /app (copied below), not from site-packages.
COPY requirements/run.txt ./
RUN /opt/venv/bin/pip install --require-hashes -r run.txt

FROM python:3.11-slim-bookworm
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    STATIC_ROOT=/app/staticfiles \
    STOREFRONT_VAR_DIR=/var/lib/storefront
# A system user without a login shell; /var/lib/storefront is the processes' writable state
# (beat's schedule and lock file, the metrics files of PROMETHEUS_MULTIPROC_DIR).
RUN groupadd --system --gid 10001 storefront \
    && useradd --system --uid 10001 --gid storefront --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin storefront \
    && install -d -o storefront -g storefront /var/lib/storefront
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY . .
# The admin's and the API docs' assets, compressed and hashed, served by WhiteNoise from the web
# process. The production settings refuse to load without their environment: this throwaway one
# exists only for this command (collectstatic connects to nothing) and is not kept in the image.
# Its metrics directory is a throwaway too: the build runs as root, and a root-owned
# /var/lib/storefront/prometheus would refuse the non-root processes' counters.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    ALLOWED_HOSTS=build.invalid BASE_URL=https://build.invalid REDIS_URL=redis://build.invalid:6379/0 \
    DATABASE_URL=postgres://build.invalid/storefront \
    PROMETHEUS_MULTIPROC_DIR=/tmp/collectstatic-metrics \
    python manage.py collectstatic --noinput
# gunicorn's settings (bind, gthread workers with WEB_THREADS threads, heartbeat files in
# /dev/shm, the control socket in the writable /var/lib/storefront) are in
# config/gunicorn.conf.py, linked where gunicorn looks by default (its working directory): an
# operator's own gunicorn command in the image gets them too.
RUN ln -s config/gunicorn.conf.py /app/gunicorn.conf.py
# Code and assets stay owned by root: the processes can read them, not change them.
# Numeric, so orchestrators can verify it is not root (e.g. Kubernetes runAsNonRoot).
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "config.wsgi"]
