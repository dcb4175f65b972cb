"""The house is layered (docs/conventions.md "Who may import whom"): no module imports from a
layer above its own, and no module imports another package's private names."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ["accounts", "stores", "events", "coupons", "orders", "oauth_cli", "webhooks"]
# Layer of each package prefix; a module may import only from a lower layer or its own package.
# Apps on one layer do not import each other (`coupons` and `oauth_cli` stand beside each other;
# an order redeems a coupon, so `orders` stands above `coupons`).
LAYERS = {
    "core": 0,
    "accounts": 1,
    "stores": 2,
    "events": 3,
    "coupons": 4,
    "oauth_cli": 4,
    "orders": 5,
    "webhooks.models": 6,
    "webhooks.dispatch": 7,
    "webhooks.deliveries": 8,
    "webhooks.channels": 9,
    "webhooks": 10,  # admin, apps, tasks, urls: the app's plumbing stands on its three rooms
    "console": 11,
}


def layer_of(module: str) -> tuple[str, int] | None:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return prefix, LAYERS[prefix]
    return None


def imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def service_modules():
    for top in ["core", *APPS, "console"]:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            yield path, ".".join(path.relative_to(ROOT).with_suffix("").parts)


@pytest.mark.parametrize("top", ["core", *APPS, "console"])
def test_no_module_imports_from_a_layer_above_its_own(top):
    wrong = []
    for path, module in service_modules():
        if module.split(".")[0] != top:
            continue
        own = layer_of(module)
        for line, imported, _names in imports(path):
            theirs = layer_of(imported)
            if own is None or theirs is None or theirs[0] == own[0]:
                continue
            if module.startswith(theirs[0] + ".") or imported.startswith(own[0] + "."):
                continue  # a package and its own modules
            if theirs[1] >= own[1]:
                wrong.append(f"{module}:{line} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_a_private_name_of_another_package():
    wrong = []
    for path, module in service_modules():
        package = module.rsplit(".", 1)[0]
        for line, imported, names in imports(path):
            if layer_of(imported) is None or imported.rsplit(".", 1)[0] == package:
                continue
            private = [name for name in names if name.startswith("_")]
            if private:
                wrong.append(f"{module}:{line} imports {private} from {imported}")
    assert not wrong, "\n".join(wrong)
