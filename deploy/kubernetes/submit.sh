#!/bin/sh
# Runs the sharded run on the current kubectl context and namespace: the
# config, the shards, then the merge once every shard has succeeded.
# Expects the PVC, the Secret ac3-api-key and the input in place
# (deploy/README.md, steps 1-4). Running it again resumes: finished shards
# find nothing left to do and end at once.
set -eu
here=$(dirname "$0")

# waitjob JOB: returns once JOB has succeeded; exits if it failed.
waitjob() {
	while :; do
		state=$(kubectl get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
		case " $state " in
		*" Complete "*) return 0 ;;
		*" Failed "*)
			echo "job $1 failed: kubectl logs -l job-name=$1 --prefix says which pod and why (deploy/README.md, 'When a shard fails')" >&2
			exit 1
			;;
		esac
		sleep 30
	done
}

kubectl apply -f "$here/configmap.yaml"
# A Job's pod template cannot change; a finished Job is replaced.
kubectl delete job ac3-shards ac3-merge --ignore-not-found
kubectl apply -f "$here/job-shards.yaml"
waitjob ac3-shards
kubectl apply -f "$here/job-merge.yaml"
waitjob ac3-merge
kubectl logs job/ac3-merge
