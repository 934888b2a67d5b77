# ripple: the two commands of the README are `make demo` and `make test`.
.PHONY: install demo test test-fast bench neo4j-start neo4j-stop clean


install:            ## build the virtualenv (reused while pyproject.toml is unchanged)
	@scripts/env.sh

demo:               ## install, ingest the sample conversation, print ripple vs flat
	@V=$$(scripts/env.sh) && HF_HUB_OFFLINE=1 $$V/bin/ripple demo

test:               ## the whole suite, with a real Neo4j started and stopped here
	@scripts/test.sh

test-fast:          ## the suite without Neo4j (local iteration only; CI runs `make test`)
	@RIPPLE_TEST_NEO4J=0 scripts/test.sh -m "not neo4j"

bench:              ## LoCoMo + multi-hop benchmarks, results into benchmarks/RESULTS.md
	@V=$$(scripts/env.sh) && HF_HUB_OFFLINE=1 $$V/bin/python -m benchmarks run --dataset locomo,musique,hotpotqa --methods bm25,flat,hybrid,ppr,ripple && $$V/bin/python -m benchmarks report --update-results-md benchmarks/RESULTS.md

neo4j-start:
	@scripts/neo4j.sh start

neo4j-stop:
	@scripts/neo4j.sh stop

clean:
	rm -rf build dist *.egg-info .pytest_cache
