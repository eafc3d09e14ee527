"""How long the data fingerprint takes on an unchanged 1 GB tree (the cache check of a paper with real data).

    .venv/bin/python benchmarks/bench_fingerprint.py [--gb 1] [--files 2000]

Writes a tree of random files (1 GB in 2,000 files by default) into a scratch folder, then times
`paperlib.data.fingerprint_real` three times: the first reads every byte (content hashes), the later ones only
`stat` the files and find their digests in the on-disk cache (keyed by path, size and modification time). Then one
file is overwritten with other bytes of the same size, and the next fingerprint must differ. Writes
benchmarks/fingerprint.json. The target: the second fingerprint of an unchanged 1 GB tree under 1 s.
"""
import argparse, json, os, platform, tempfile, time
from pathlib import Path

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.0); ap.add_argument("--files", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        os.environ["PAPERLIB_CACHE"] = str(Path(d) / "cache")        # a cold cache, not the user's
        from paperlib.data import fingerprint_real
        root = Path(d) / "data"; size = int(args.gb * 2**30 / args.files)
        for i in range(args.files):
            p = root / f"class_{i % 20:02d}" / f"img_{i:05d}.bin"
            p.parent.mkdir(parents=True, exist_ok=True); p.write_bytes(os.urandom(size))
        old = time.time() - 60                                         # older than the cache's 2-second "racy" window
        for p in root.rglob("*.bin"): os.utime(p, (old, old))
        times, fps = [], []
        for _ in range(3):
            t0 = time.perf_counter(); fps.append(fingerprint_real(root)); times.append(round(time.perf_counter() - t0, 3))
        victim = next(root.rglob("*.bin")); victim.write_bytes(os.urandom(size))
        t0 = time.perf_counter(); changed = fingerprint_real(root); t_changed = round(time.perf_counter() - t0, 3)
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")),
               gb=args.gb, files=args.files, first_s=times[0], warm_s=times[1:], same_fingerprint=len(set(fps)) == 1,
               after_one_file_changed_s=t_changed, change_detected=changed != fps[0])
    (Path(__file__).resolve().parent / "fingerprint.json").write_text(json.dumps(res, indent=1) + "\n")
    print(res)

if __name__ == "__main__":
    main()
