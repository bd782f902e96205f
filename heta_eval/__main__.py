from heta_eval.cli import main

main()
