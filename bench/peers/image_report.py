"""Summarises the image benchmark. Reads the JSON lines of bench/image_bench (stoke and the
plain-loop bound) and of bench/peers/image_peers.py (each peer in each configuration), and
prints every configuration against the two-thread bound, each peer's best against stoke's best,
and `ratio <name>: <x>` lines."""
import json
import sys


def json_lines(path):
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def main(stoke_path, peers_path):
    stoke = {row["loader"]: row for row in json_lines(stoke_path)}
    bound_name = next(name for name in stoke if name.startswith("bound") and "1 thread" not in name)
    bound = stoke[bound_name]["images_per_second"]
    ours = {name: row for name, row in stoke.items() if name.startswith("stoke")}
    best_name = max(ours, key=lambda name: ours[name]["images_per_second"])
    best = ours[best_name]["images_per_second"]
    peers = {}
    print(f"{'peer: configuration':88} {'images/s':>8} {'of bound':>8} {'first batch':>11}")
    for row in json_lines(peers_path):
        if "error" in row:
            print(f"{row['peer']}: {row.get('config', '')}: not run: {row['error']}")
            continue
        label = f"{row['peer']}: {row['config']}"
        print(f"{label:88} {row['images_per_second']:8.0f} {row['images_per_second'] / bound:8.2f} "
              f"{1e3 * row['first_batch_seconds']:8.1f} ms")
        current = peers.get(row["peer"])
        if current is None or row["images_per_second"] > current["images_per_second"]:
            peers[row["peer"]] = row
    print()
    print(f"stoke's best: {best_name}, {best:.0f} images/s, first batch "
          f"{1e3 * ours[best_name]['first_batch_seconds']:.1f} ms")
    for name, row in sorted(peers.items(), key=lambda item: -item[1]["images_per_second"]):
        print(f"{name}'s best: {row['config']}, {row['images_per_second']:.0f} images/s "
              f"({row['images_per_second'] / bound:.2f} of the bound), first batch "
              f"{1e3 * row['first_batch_seconds']:.1f} ms: stoke's best is "
              f"{best / row['images_per_second']:.1f}x its throughput")
    print()
    for name, row in peers.items():
        key = name.lower().replace(" ", "_").replace("-", "_")
        print(f"ratio image_stoke_best_over_{key}: {best / row['images_per_second']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
