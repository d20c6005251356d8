"""oracle search's text output (issue 17): with --max-gpus the answer comes first, one line
per GPU count, then the fastest count in detail; piped output has no trailing spaces."""

import json


def test_max_gpus_answers_first_and_details_only_the_fastest(run):
    args = ("search", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8", "--max-gpus", "32")
    r = run(*args, "--width", "80")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    data = json.loads(run(*args, "-f", "json").out)
    assert len(data["searches"]) == 3  # JSON keeps every count
    assert lines[0].startswith("Fastest over 8, 16, 32 GPUs: 32 GPUs")
    rows = [ln.split()[0] for ln in lines[1:12] if ln.strip()[:2].strip().isdigit()]
    assert rows == ["8", "16", "32"]
    # one detailed section, the fastest count's
    assert sum(" · 32 GPUs · " in ln for ln in lines) == 1
    assert not any(" · 8 GPUs · " in ln or " · 16 GPUs · " in ln for ln in lines)
    assert all(ln == ln.rstrip() for ln in lines) and max(map(len, lines)) <= 80
