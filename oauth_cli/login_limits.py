"""django-axes hooks of the sign-in limits (settings in config/settings/logins.py)."""

USERNAME_KEY_PREFIX = "username:"


def username_key(request, credentials: dict | None) -> str | None:
    """The per-username counter's key: the submitted username, marked as one.

    django-axes hashes each counter's bare value, so without the mark a failed sign-in as
    username "203.0.113.7" would count against the client address 203.0.113.7.
    """
    if credentials is not None and "username" in credentials:
        username = credentials["username"]
    else:
        username = getattr(request, "POST", {}).get("username")
    return None if username is None else f"{USERNAME_KEY_PREFIX}{username}"
