"""Record PyTorch 2.13's output of every snippet into data/torch_outputs.json.

Run with PyTorch installed: ``python tests/support/record_torch.py``.  The test suite compares
srcgrad's output with this record always, and with live PyTorch when it is installed.
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from snippets import SNIPPETS, run_snippet  # noqa: E402

if __name__ == "__main__":
    import torch
    out = {"torch_version": torch.__version__,
           "outputs": {name: run_snippet(name, "torch") for name in SNIPPETS}}
    path = pathlib.Path(__file__).parent / "data" / "torch_outputs.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(SNIPPETS)} snippets from torch {torch.__version__} into {path}")
