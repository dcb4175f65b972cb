from dataclasses import dataclass, field

from accounts.abilities import expand_abilities

CREDENTIAL_API_KEY = "api_key"
CREDENTIAL_OAUTH = "oauth"


@dataclass(frozen=True)
class Credential:
    """What authenticated a request: an API key or an OAuth access token (request.auth)."""

    type: str
    user_id: int
    abilities: tuple[str, ...]
    # "all": every store the user is a member of; "selected": only `selected_store_ids`.
    store_access: str
    rate_limit_key: str
    selected_store_ids: frozenset[int] = field(default_factory=frozenset)
    current_store_id: int | None = None
    # The key's current store was deleted and no other chosen since: no store without X-STORE.
    current_store_deleted: bool = False
    api_key_id: int | None = None
    access_token_id: int | None = None
    # What stores.access read for this credential (its memberships by X-STORE slug, the one it
    # acts through without X-STORE), kept with it while its identity is current
    # (accounts/identity.py). Opaque here: accounts reads no store table.
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def requires_store_header(self) -> bool:
        """OAuth tokens must name the store; API keys fall back to current/first store."""
        return self.type == CREDENTIAL_OAUTH

    def grants(self, ability: str) -> bool:
        return ability in expand_abilities(self.abilities)

    def may_access_store(self, store_id: int) -> bool:
        return self.store_access == "all" or store_id in self.selected_store_ids
