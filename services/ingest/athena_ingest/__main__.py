from athena_ingest.server import main

main()
