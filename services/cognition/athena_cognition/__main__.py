from athena.omp import prefer_passive_omp_wait

prefer_passive_omp_wait()  # before torch loads

from athena_cognition.server import main  # noqa: E402

main()
