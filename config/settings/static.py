"""Static files, served by the web process itself with WhiteNoise (no separate file server).
Django's plain storage here, so the dev server and the suite need no collectstatic; production.py
switches to WhiteNoise's compressed, hashed storage, cached for a year.
"""

from pathlib import Path

from config.settings.env import BASE_DIR, env

STATIC_URL = "static/"
# Where collectstatic writes and WhiteNoise reads; the image bakes it in at build time.
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
HASHED_STATIC_FILES_STORAGE = "whitenoise.storage.CompressedManifestStaticFilesStorage"
# Outside production, files are looked up per request in the apps' static folders, so the dev
# server (also with DEBUG off) and the suite serve them without a collectstatic run, and
# WhiteNoise does not warn at every start about a STATIC_ROOT that was never collected.
# production.py turns both off: one scan of STATIC_ROOT when a process starts.
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
