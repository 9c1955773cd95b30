"""A concurrent writer: appends small parquet files to table/partition
directories (round robin) until a stop file appears, the way a pipeline
does: write a hidden temporary file, then rename it into place; a missing
directory is created (as Hive and Spark do for a partition).

    python writer.py CONFIG.json

CONFIG: {"targets": [{"table", "unit", "dir"}], "templates": [local paths],
         "interval": seconds, "stop": path, "out": path}
Writes OUT: [{"table", "unit", "template", "path"}] for every file whose
rename succeeded (a failed rename - the directory moved away meanwhile -
is retried with a new file and not counted).
"""
import json
import os
import shutil
import sys
import time
import uuid


def main():
    cfg = json.load(open(sys.argv[1]))
    written, failed = [], 0
    i = 0
    while not os.path.exists(cfg["stop"]):
        target = cfg["targets"][i % len(cfg["targets"])]
        tmpl = i % len(cfg["templates"])
        name = f"late-w{i:04d}-{uuid.uuid4().hex[:6]}.parquet"
        d = target["dir"]
        try:
            os.makedirs(d, exist_ok=True)
            tmp = os.path.join(d, f".{name}.tmp")
            shutil.copyfile(cfg["templates"][tmpl], tmp)
            os.rename(tmp, os.path.join(d, name))
            written.append({"table": target["table"], "unit": target["unit"], "template": tmpl,
                            "path": os.path.join(d, name)})
        except OSError:
            failed += 1
        i += 1
        time.sleep(cfg["interval"])
    with open(cfg["out"], "w") as fh:
        json.dump({"written": written, "failed": failed}, fh)


if __name__ == "__main__":
    main()
