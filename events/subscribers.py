"""Who hears of a recorded event, inside its transaction.

The journal sits below the apps that consume it: an app above (webhooks) subscribes in its
`AppConfig.ready`, as Django's own signals are connected, so `events` imports none of them
(docs/design.md "A layered house").
"""

from collections.abc import Callable

_subscribers: list[Callable] = []


def subscribe(callback: Callable) -> None:
    """`callback(event=...)` runs in `events.record`, in the transaction of the change."""
    if callback not in _subscribers:
        _subscribers.append(callback)


def notify(event) -> None:
    for callback in _subscribers:
        callback(event=event)
