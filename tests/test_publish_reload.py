"""What a user loads back is what was published: no cache serves another folder's rows (issue 15)."""

import datasets
from test_export import KEPT, make_run, verdict

from factory.export import ExportOptions, publish
from factory.store import Store


def test_the_suite_never_writes_the_users_hf_caches():
    """conftest points every Hugging Face cache into the suite's own temp dir: `datasets` caches a
    local folder by name, so fixture rows left in ~/.cache would come back for a user's own folder."""
    import datasets.config
    import huggingface_hub.constants
    from conftest import HF_TEST_HOME

    for path in (datasets.config.HF_DATASETS_CACHE, huggingface_hub.constants.HF_HUB_CACHE):
        assert str(path).startswith(HF_TEST_HOME), path


def test_a_published_folder_loads_its_own_rows_after_another_of_the_same_name(tmp_path):
    """`datasets` caches a local folder by name and file patterns: without the content digest in the
    shard names, the second `hub` loaded the first one's rows."""
    first, second = tmp_path / "one" / "hub", tmp_path / "two" / "hub"
    publish(make_run(tmp_path / "run1"), to=first, options=ExportOptions(validation=0.0))
    run2 = make_run(tmp_path / "run2")
    with Store.open(run2) as store:  # the user's next run: a filter drops one more row
        verdict(store, "refine:p1", "dedup", False, "duplicate of refine:p2")
    publish(run2, to=second, options=ExportOptions(validation=0.0))
    one = {row["id"] for row in datasets.load_dataset(str(first), "sharegpt")["train"]}
    two = {row["id"] for row in datasets.load_dataset(str(second), "sharegpt")["train"]}
    assert one == KEPT and two == KEPT - {"refine:p1"}
