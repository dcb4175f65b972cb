"""Abilities (what a credential may do) and role permissions (what a member may do).

docs/design.md "Credentials, roles, abilities": a key holds abilities such as `account:read`,
`stores:create` and one per area (`coupon`, `invoice`, ...); a role holds area permissions
(`coupon:read`, `coupon:write`, ...). What applies is their intersection.
"""

ACCOUNT_READ = "account:read"
STORES_CREATE = "stores:create"
ALL = "*"
AREAS = ("coupon", "invoice", "order", "event", "webhook")
ACCOUNT_ABILITIES = (ACCOUNT_READ, STORES_CREATE)
# What may be granted to an API key: account abilities, whole areas, read-only areas, or all.
GRANTABLE_ABILITIES = (ALL, *ACCOUNT_ABILITIES, *AREAS, *(f"{a}:read" for a in AREAS))

AREA_PERMISSIONS = frozenset(f"{a}:{op}" for a in AREAS for op in ("read", "write"))

ROLE_OWNER, ROLE_ADMIN, ROLE_STAFF = "owner", "admin", "staff"
ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    ROLE_OWNER: AREA_PERMISSIONS,
    ROLE_ADMIN: AREA_PERMISSIONS,
    ROLE_STAFF: frozenset(f"{a}:read" for a in AREAS),
}


def expand_abilities(abilities) -> frozenset[str]:
    """Turns granted abilities into the permission strings they cover."""
    expanded: set[str] = set()
    for ability in abilities:
        if ability == ALL:
            expanded |= {*ACCOUNT_ABILITIES, *AREA_PERMISSIONS}
        elif ability in AREAS:
            expanded |= {f"{ability}:read", f"{ability}:write"}
        else:
            expanded.add(ability)
    return frozenset(expanded)


def effective_abilities(key_abilities, role: str | None) -> frozenset[str]:
    """Key abilities ∩ role permissions, plus the account abilities the key holds."""
    expanded = expand_abilities(key_abilities)
    role_permissions = ROLE_PERMISSIONS.get(role, frozenset()) if role else frozenset()
    return (expanded & role_permissions) | (expanded & set(ACCOUNT_ABILITIES))
