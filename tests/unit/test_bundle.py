"""The Databricks asset bundle, checked offline (no Databricks CLI here).

``databricks.yml`` and ``resources/*.yml`` must parse, reference only files, variables and entry
points that exist, pass the wheel task parameters the CLI accepts, schedule on a valid Quartz cron
and define the dev and prod targets.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml

from epoch_audit.cli import build_parser
from epoch_audit.config import load_config

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "databricks.yml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
REF = re.compile(r"\$\{([a-z_]+(?:\.[A-Za-z0-9_]+)+)\}")


def load_bundle() -> tuple[dict[str, Any], dict[Path, dict[str, Any]]]:
    """The root document and every included resource document (keyed by file)."""
    root = yaml.safe_load(BUNDLE.read_text())
    included: dict[Path, dict[str, Any]] = {}
    for pattern in root.get("include", []):
        matches = sorted(REPO.glob(pattern))
        assert matches, f"include pattern {pattern} matches nothing"
        for path in matches:
            included[path] = yaml.safe_load(path.read_text())
    return root, included


# What a deploy passes for the variables without a default (--var name=value).
DEPLOY_VARS = {"warehouse_id": "4b9b953939869799", "failure_webhook_id": "1c2d3e4f-0000-4000-8000-000000000000"}


def variables(root: dict[str, Any], target: str | None = None) -> dict[str, str]:
    """Variable values for a target: defaults, --var values, target overrides, references resolved."""
    values = {name: str(spec["default"]) for name, spec in root["variables"].items() if "default" in spec}
    values.update({k: v for k, v in DEPLOY_VARS.items() if k not in values})
    if target:
        values.update({k: str(v) for k, v in (root["targets"][target].get("variables") or {}).items()})
    for _ in range(5):
        values = {k: resolve(v, values, target or "dev") for k, v in values.items()}
    return values


def resolve(text: str, values: dict[str, str], target: str = "dev") -> str:
    """Substitute ${var.*}, ${bundle.*} and ${workspace.file_path} (= the synced bundle root)."""
    def sub(match: re.Match) -> str:
        ref = match.group(1)
        if ref.startswith("var."):
            return values[ref[4:]]
        if ref == "bundle.target":
            return target
        if ref == "bundle.name":
            return "epoch-audit"
        if ref == "workspace.file_path":
            return str(REPO)
        raise AssertionError(f"unknown reference ${{{ref}}}")
    return REF.sub(sub, text)


def jobs_in(included: dict[Path, dict[str, Any]]) -> list[tuple[Path, str, dict[str, Any]]]:
    return [
        (path, name, job)
        for path, doc in included.items()
        for name, job in ((doc.get("resources") or {}).get("jobs") or {}).items()
    ]


# ---- Quartz cron ----------------------------------------------------------------------------

MONTHS = "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC"
DAYS = "SUN|MON|TUE|WED|THU|FRI|SAT"


def _quartz_field(value: str, low: int, high: int, names: str = "", special: str = "") -> bool:
    names_map = {n: i + low for i, n in enumerate(names.split("|"))} if names else {}

    def number(token: str) -> int | None:
        if token.isdigit():
            return int(token)
        return names_map.get(token.upper())

    for part in value.split(","):
        if part == "*" or (special and re.fullmatch(special, part)):
            continue
        base, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return False
        if base == "*" and step:
            continue
        lo, _, hi = base.partition("-")
        bounds = [number(lo)] + ([number(hi)] if hi else [])
        if any(b is None or not low <= b <= high for b in bounds):
            return False
    return True


def is_quartz_cron(expr: str) -> bool:
    """Quartz cron: sec min hour day-of-month month day-of-week [year]; one of the day fields is '?'."""
    f = expr.split()
    if len(f) not in (6, 7):
        return False
    ok = (
        _quartz_field(f[0], 0, 59)
        and _quartz_field(f[1], 0, 59)
        and _quartz_field(f[2], 0, 23)
        and _quartz_field(f[3], 1, 31, special=r"\?|L|LW|\d{1,2}W|L-\d{1,2}")
        and _quartz_field(f[4], 1, 12, MONTHS)
        and _quartz_field(f[5], 1, 7, DAYS, special=r"\?|L|[1-7]L|[1-7]#[1-5]")
        and (len(f) == 6 or _quartz_field(f[6], 1970, 2199))
    )
    return ok and (f[3] == "?") != (f[5] == "?")


@pytest.mark.parametrize(
    ("expr", "valid"),
    [
        ("0 30 2 * * ?", True),
        ("0 0/15 * ? * MON-FRI", True),
        ("0 0 3 L * ?", True),
        ("0 0 3 * * 6#3", False),  # both day fields set
        ("0 0 3 ? * 6#3", True),
        ("30 2 * * *", False),  # unix cron, five fields
        ("0 61 2 * * ?", False),
        ("0 30 2 * * *", False),  # neither day field is '?'
        ("0 30 2 ? * ?", False),
    ],
)
def test_quartz_validator(expr, valid):
    assert is_quartz_cron(expr) is valid


# ---- the bundle -----------------------------------------------------------------------------


def test_bundle_parses_and_names_its_parts():
    root, included = load_bundle()
    assert root["bundle"]["name"] == "epoch-audit"
    assert {REPO / "resources" / "epoch_audit_job.yml", REPO / "resources" / "dashboard.yml"} <= set(included)
    assert jobs_in(included), "no job defined"


def test_targets_dev_and_prod():
    root, _ = load_bundle()
    targets = root["targets"]
    assert {"dev", "prod"} <= set(targets)
    assert targets["dev"]["mode"] == "development" and targets["dev"].get("default") is True
    assert targets["prod"]["mode"] == "production"
    assert variables(root, "prod")["schedule_pause_status"] == "UNPAUSED"
    # prod also pages through a notification destination on failure
    for job in targets["prod"]["resources"]["jobs"].values():
        assert job["webhook_notifications"]["on_failure"][0]["id"] == "${var.failure_webhook_id}"


def test_every_reference_is_defined():
    root, included = load_bundle()
    defined = set(root["variables"])
    texts = [BUNDLE.read_text(), *(p.read_text() for p in included)]
    for text in texts:
        for ref in REF.findall(text):
            if ref.startswith("var."):
                assert ref[4:] in defined, f"undefined variable {ref}"
            else:
                assert ref in {"bundle.target", "bundle.name", "workspace.file_path"}, ref
    prod_jobs = set(root["targets"]["prod"]["resources"]["jobs"])
    assert prod_jobs <= {name for _, name, _ in jobs_in(included)}, "prod overrides an unknown job"


def test_wheel_artifact_is_the_project_and_tasks_use_it():
    root, included = load_bundle()
    (artifact,) = root["artifacts"].values()
    assert artifact["type"] == "whl" and (REPO / artifact["path"] / "pyproject.toml").is_file()
    build = artifact["build"].split()
    assert build[-5:] == ["wheel", "--no-deps", "-w", "dist", "."]
    dist = (REPO / artifact["path"] / "dist").resolve()
    for path, name, job in jobs_in(included):
        libraries = [lib["whl"] for t in job["tasks"] for lib in t.get("libraries", [])]
        libraries += [d for env in job.get("environments", []) for d in env["spec"]["dependencies"]]
        assert libraries, f"{name} installs no wheel"
        for whl in libraries:
            assert (path.parent / whl).parent.resolve() == dist and whl.endswith(".whl"), (name, whl)


def test_wheel_task_entry_point_exists():
    _, included = load_bundle()
    dist_name = re.sub(r"[-_.]+", "-", PYPROJECT["project"]["name"]).lower()
    scripts = PYPROJECT["project"]["scripts"]
    for _, name, job in jobs_in(included):
        for task in job["tasks"]:
            wheel = task["python_wheel_task"]
            assert re.sub(r"[-_.]+", "-", wheel["package_name"]).lower() == dist_name, name
            target = scripts[wheel["entry_point"]]
            module, _, func = target.partition(":")
            imported = __import__(module, fromlist=[func])
            assert callable(getattr(imported, func)), target


def test_wheel_task_parameters_are_accepted_by_the_cli():
    root, included = load_bundle()
    values = variables(root, "prod")
    for _, name, job in jobs_in(included):
        for task in job["tasks"]:
            params = [resolve(str(p), values, "prod") for p in task["python_wheel_task"]["parameters"]]
            args = build_parser().parse_args(params)
            assert args.command == task["task_key"].replace("audit", "run"), name
            assert args.lake == values["lake_path"]
            if args.command == "run":
                assert args.input == [values["input_path"]]
            # the config travels with the bundle's synced files (and inside the wheel)
            conf = Path(args.conf)
            assert conf.is_file(), conf
            cfg = load_config(conf)
            assert cfg.spark.master is None and cfg.storage.engine == "delta-spark"


def test_schedule_retries_compute_and_alerts():
    root, included = load_bundle()
    for target in ("dev", "prod"):
        values = variables(root, target)
        for _, name, job in jobs_in(included):
            schedule = job["schedule"]
            cron = resolve(schedule["quartz_cron_expression"], values, target)
            assert is_quartz_cron(cron), (name, cron)
            ZoneInfo(resolve(schedule["timezone_id"], values, target))
            assert resolve(schedule["pause_status"], values, target) in ("PAUSED", "UNPAUSED")
            assert job["max_concurrent_runs"] == 1, "two runs must not write one lake at once"
            assert job["email_notifications"]["on_failure"], name
            clusters = {c["job_cluster_key"] for c in job.get("job_clusters", [])}
            environments = {e["environment_key"] for e in job.get("environments", [])}
            for task in job["tasks"]:
                # a retry of a night that found violations exits 0 and would turn the failure into a success
                assert task["max_retries"] == 0, name
                keys = [task.get("job_cluster_key"), task.get("environment_key")]
                assert sum(k is not None for k in keys) == 1, f"{name}: one compute per task"
                if task.get("job_cluster_key"):
                    assert task["job_cluster_key"] in clusters
                else:
                    assert task["environment_key"] in environments
            # the audit, then maintenance whatever the audit's outcome (a night with violations fails its task)
            tasks = {task["task_key"]: task for task in job["tasks"]}
            assert list(tasks) == ["audit", "maintain"], name
            maintain = tasks["maintain"]
            assert maintain["depends_on"] == [{"task_key": "audit"}] and maintain["run_if"] == "ALL_DONE", name
    kinds = {("job_clusters" in job, "environments" in job) for _, _, job in jobs_in(included)}
    assert kinds == {(True, False), (False, True)}, "one job-cluster and one serverless variant"


def test_dashboard_resource_points_at_the_lakeview_file():
    _, included = load_bundle()
    boards = [
        (path, board)
        for path, doc in included.items()
        for board in ((doc.get("resources") or {}).get("dashboards") or {}).values()
    ]
    assert boards
    for path, board in boards:
        file = (path.parent / board["file_path"]).resolve()
        assert file.is_file() and file.name.endswith(".lvdash.json"), file
        assert board["warehouse_id"] == "${var.warehouse_id}"


# ---- the published bundle models (databricks-bundles, released with the CLI of the same version) ----


def test_resources_validate_against_the_published_bundle_models():
    """Every job and dashboard, and every target's override of one, parses into the typed models
    the Databricks CLI's bundle schema generates: an unknown field or a wrong type raises."""
    from databricks.bundles.dashboards import Dashboard
    from databricks.bundles.jobs import Job

    root, included = load_bundle()
    documents = [doc for doc in included.values()]
    documents += [target for target in root["targets"].values() if "resources" in target]
    checked = 0
    for doc in documents:
        resources = doc.get("resources") or {}
        assert set(resources) <= {"jobs", "dashboards"}, f"unchecked resource kinds {set(resources)}"
        for job in (resources.get("jobs") or {}).values():
            Job.from_dict(job)
            checked += 1
        for dashboard in (resources.get("dashboards") or {}).values():
            Dashboard.from_dict(dashboard)
            checked += 1
    assert checked >= 5  # two jobs, the dashboard, two prod overrides


def test_the_models_catch_a_wrong_field():
    from databricks.bundles.jobs import Job

    _, included = load_bundle()
    (_, _, job), *_ = jobs_in(included)
    with pytest.raises(ValueError, match="max_concurent_runs"):
        Job.from_dict({**job, "max_concurent_runs": 1})


def test_cli_version_is_pinned_to_what_the_models_accept():
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    root, _ = load_bundle()
    pinned = SpecifierSet(root["bundle"]["databricks_cli_version"].replace(" ", ""))
    assert version("databricks-bundles") in pinned, (pinned, version("databricks-bundles"))


def test_no_empty_placeholder_ids():
    """A variable left "" (a warehouse or destination id) makes a prod deploy invalid: ids have no
    default and must be given at deploy; every id field resolves to something in every target."""
    root, included = load_bundle()
    for name, spec in root["variables"].items():
        assert spec.get("default", None) != "", f"variable {name} defaults to an empty string"
    id_fields = re.compile(r"^\s*-?\s*(?:id|warehouse_id):\s*(\S+)", re.M)
    texts = [BUNDLE.read_text(), *(p.read_text() for p in included)]
    for target in root["targets"]:
        values = variables(root, target)
        for text in texts:
            for raw in id_fields.findall(text):
                assert resolve(raw, values, target).strip("\"'"), (target, raw)
