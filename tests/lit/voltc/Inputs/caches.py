"""Reads or edits Rank.caches in a plan dumped to JSON by flatc.

  caches.py show PLAN.json                      prints each rank's groups
  caches.py set PLAN.json RANK GROUP FIELD JSON prints the plan with
                                                ranks[RANK].caches[GROUP].FIELD = JSON
  caches.py copy PLAN.json RANK GROUP           prints the plan with group
                                                GROUP of rank RANK appended again
"""
import json
import sys


def main():
    command, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        plan = json.load(f)
    if command == "show":
        for rank in plan["ranks"]:
            for g in rank.get("caches", []):
                print("rank %d: %s '%s' layers %s blocks %d x %d, slots %d x %d bytes, at %d, %d bytes"
                      % (rank.get("rank", 0), g.get("kind", "PagedKv"), g.get("name", ""),
                         g.get("layers", []), g.get("num_blocks", 0), g.get("block_size", 0),
                         g.get("num_slots", 0), g.get("slot_bytes", 0), g.get("offset", 0),
                         g.get("bytes", 0)))
            print("rank %d: cache_bytes %d" % (rank.get("rank", 0), rank.get("cache_bytes", 0)))
        return
    rank = plan["ranks"][int(sys.argv[3])]
    group = int(sys.argv[4])
    if command == "set":
        rank["caches"][group][sys.argv[5]] = json.loads(sys.argv[6])
    elif command == "copy":
        rank["caches"].append(dict(rank["caches"][group]))
    else:
        sys.exit("unknown command " + command)
    json.dump(plan, sys.stdout)


if __name__ == "__main__":
    main()
