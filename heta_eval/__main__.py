from heta_eval.cli.main import main

main()
