"""Settings of the small Django project tests/test_django.py runs against the server under
test: the contrib apps whose migrations every Django site runs, and `ledger`, an app with
its own test suite. The connection comes from the environment the test sets."""

import os

SECRET_KEY = "quill-test-only"
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.admin",
    "django.contrib.messages",
    "ledger",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.request",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.mysql",
        "NAME": os.environ["LEDGER_DB_NAME"],
        "USER": os.environ.get("LEDGER_DB_USER", "root"),
        "PASSWORD": os.environ.get("LEDGER_DB_PASSWORD", ""),
        "HOST": os.environ.get("LEDGER_DB_HOST", "127.0.0.1"),
        "PORT": os.environ["LEDGER_DB_PORT"],
        "TEST": {"NAME": os.environ["LEDGER_DB_NAME"] + "_test"},
    }
}
