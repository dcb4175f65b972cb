from celery import shared_task

from oauth_cli.services import oauth_prune


@shared_task(name="oauth_cli.prune")
def oauth_prune_task():
    oauth_prune()
